//! Who a person signed in through the company's identity provider is in Anteroom: their role and groups from
//! the provider's groups claim, through the operator's mapping (docs/operations.md#sign-in-through-an-identity-provider).
//!
//! The provider is trusted to say who someone is, not to send sane amounts: a claim is refused, never trimmed,
//! when it is larger than Anteroom will read, so a person never signs in with half their groups.

use std::collections::BTreeSet;

use crate::{
    access::{Role, check_username, normalise_email},
    error::ManagedInputError,
    responders::{GROUPS_MAX, check_name},
};

/// The most provider groups one sign-in may carry; a claim with more is refused (not truncated: the groups
/// that would be cut could be the ones that grant the right to answer).
pub const PROVIDER_GROUPS_MAX: usize = 1_000;

/// The longest subject read (OpenID Connect says at most 255 ASCII characters).
pub const SUBJECT_CHARS_MAX: usize = 255;

/// The longest provider group name read (Entra ID sends object ids, Okta names; both are far shorter).
pub const PROVIDER_GROUP_CHARS_MAX: usize = 256;

/// The most entries the operator's mapping may hold.
pub const MAPPING_ENTRIES_MAX: usize = GROUPS_MAX;

/// One line of the mapping: members of `provider_group` get at least `role`, and `group` when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingEntry {
    pub provider_group: String,
    pub role: Role,
    pub group: Option<String>,
}

/// The operator's mapping from provider groups to Anteroom roles and groups (`ANTEROOM_OIDC_GROUPS`), and the
/// role of someone in none of them (`None`: they may not sign in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMapping {
    pub entries: Vec<MappingEntry>,
    pub default_role: Option<Role>,
}

/// What one sign-in grants: the person's role and their Anteroom groups, sorted and without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    pub role: Role,
    pub groups: Vec<String>,
}

impl GroupMapping {
    /// Reads `sre=responder:sre, platform-admins=admin` (a provider group, `=`, a role, and optionally `:` and
    /// the Anteroom group its members join); a provider group may appear on several entries.
    pub fn parse(text: &str, default_role: Option<Role>) -> Result<Self, ManagedInputError> {
        let mut entries = Vec::new();
        for item in text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let invalid = |why: &str| {
                ManagedInputError::validation(format!(
                    "The group mapping entry {item:?} {why}: write PROVIDER_GROUP=ROLE or PROVIDER_GROUP=ROLE:ANTEROOM_GROUP, \
                     ROLE one of viewer, responder, admin."
                ))
            };
            let (provider_group, granted) =
                item.rsplit_once('=').ok_or_else(|| invalid("has no ="))?;
            let provider_group = provider_group.trim();
            if provider_group.is_empty()
                || provider_group.chars().count() > PROVIDER_GROUP_CHARS_MAX
            {
                return Err(invalid("names no provider group, or one too long"));
            }
            let (role, group) = match granted.split_once(':') {
                Some((role, group)) => (role.trim(), Some(group.trim().to_owned())),
                None => (granted.trim(), None),
            };
            let role = Role::parse(role).ok_or_else(|| invalid("names no role Anteroom knows"))?;
            if let Some(group) = &group {
                check_name(group)
                    .map_err(|_| invalid("names an Anteroom group that is not a valid name"))?;
            }
            entries.push(MappingEntry {
                provider_group: provider_group.to_owned(),
                role,
                group,
            });
        }
        if entries.len() > MAPPING_ENTRIES_MAX {
            return Err(ManagedInputError::validation(format!(
                "The group mapping has {} entries; Anteroom reads at most {MAPPING_ENTRIES_MAX}.",
                entries.len()
            )));
        }
        Ok(Self {
            entries,
            default_role,
        })
    }

    /// What a person in `provider_groups` is granted: the highest role of the entries their groups match, and
    /// every Anteroom group those entries name; `default_role` (with no group) when none matches. Refused when
    /// the claim is larger than Anteroom reads, or when no entry matches and there is no default role.
    pub fn grant(&self, provider_groups: &[String]) -> Result<Granted, SignInRefusal> {
        if provider_groups.len() > PROVIDER_GROUPS_MAX {
            return Err(SignInRefusal::TooManyGroups(provider_groups.len()));
        }
        if provider_groups
            .iter()
            .any(|group| group.chars().count() > PROVIDER_GROUP_CHARS_MAX)
        {
            return Err(SignInRefusal::GroupNameTooLong);
        }
        let held: BTreeSet<&str> = provider_groups.iter().map(String::as_str).collect();
        let matched: Vec<&MappingEntry> = self
            .entries
            .iter()
            .filter(|entry| held.contains(entry.provider_group.as_str()))
            .collect();
        let Some(role) = matched
            .iter()
            .map(|entry| entry.role)
            .max()
            .or(self.default_role)
        else {
            return Err(SignInRefusal::NoMappedGroup);
        };
        let groups: BTreeSet<String> = matched
            .iter()
            .filter_map(|entry| entry.group.clone())
            .collect();
        Ok(Granted {
            role,
            groups: groups.into_iter().collect(),
        })
    }
}

/// Why a provider sign-in is refused before anything is written, in words the person can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignInRefusal {
    #[error(
        "Your identity provider sent {0} groups; Anteroom reads at most 1,000. Ask your administrator to send only the groups Anteroom maps (a groups filter on the provider's Anteroom app)."
    )]
    TooManyGroups(usize),
    #[error(
        "Your identity provider sent a group name longer than 256 characters; Anteroom does not read it."
    )]
    GroupNameTooLong,
    #[error(
        "Your account is in none of the groups this Anteroom admits. Ask your administrator to add you to one."
    )]
    NoMappedGroup,
}

/// A person as the identity provider describes them at one sign-in, with what the mapping grants them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderPerson {
    /// The provider's issuer URL and its subject: together, who this is for good (an e-mail can change hands).
    pub issuer: String,
    pub subject: String,
    /// Their e-mail, normalised, and whether the provider says it verified it (only a verified one links an
    /// existing local person).
    pub email: Option<String>,
    pub email_verified: bool,
    /// The username a new person gets when it is free (a number is added when it is not).
    pub username: String,
    pub granted: Granted,
}

impl ProviderPerson {
    /// A person from the ID token's claims; `preferred_username`, else the e-mail's local part, else the
    /// subject, made into a valid username.
    pub fn new(
        issuer: &str,
        subject: &str,
        email: Option<&str>,
        email_verified: bool,
        preferred_username: Option<&str>,
        granted: Granted,
    ) -> Self {
        let email = email.and_then(|email| normalise_email(email).ok());
        // An unverified e-mail is anyone's to type, so its local part names nobody.
        let candidates = [
            preferred_username.map(str::to_owned),
            email
                .as_deref()
                .filter(|_| email_verified)
                .and_then(|email| email.split_once('@'))
                .map(|(local, _)| local.to_owned()),
            Some(subject.to_owned()),
        ];
        let username = candidates
            .into_iter()
            .flatten()
            .map(|name| username_from(&name))
            .find(|name| check_username(name).is_ok())
            .unwrap_or_else(|| "person".to_owned());
        Self {
            issuer: issuer.to_owned(),
            subject: subject.to_owned(),
            email,
            email_verified,
            username,
            granted,
        }
    }
}

/// The longest username taken from the claims: room is left for `-` and a number of up to eight characters
/// when it is taken (usernames are at most 64).
const USERNAME_FROM_CLAIMS_MAX: usize = 55;

/// `name` with every character a username may not hold replaced by `-`, cut to leave room for a number.
fn username_from(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-@".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(USERNAME_FROM_CLAIMS_MAX)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn the_highest_role_and_every_named_group_are_granted() {
        let mapping = GroupMapping::parse(
            "sre=responder:sre, platform=responder:platform, admins=admin, sre=viewer:readers",
            Some(Role::Viewer),
        )
        .expect("mapping");
        assert_eq!(
            mapping.grant(&groups(&["sre", "admins", "unmapped"])),
            Ok(Granted {
                role: Role::Admin,
                groups: groups(&["readers", "sre"]),
            })
        );
        assert_eq!(
            mapping.grant(&groups(&["nothing-mapped"])),
            Ok(Granted {
                role: Role::Viewer,
                groups: Vec::new(),
            })
        );
    }

    #[test]
    fn without_a_default_role_an_unmapped_person_is_refused() {
        let mapping = GroupMapping::parse("sre=responder:sre", None).expect("mapping");
        assert_eq!(mapping.grant(&[]), Err(SignInRefusal::NoMappedGroup));
    }

    #[test]
    fn oversized_claims_are_refused_not_trimmed() {
        let mapping =
            GroupMapping::parse("sre=responder:sre", Some(Role::Viewer)).expect("mapping");
        let mut many: Vec<String> = (0..10_000).map(|n| format!("group-{n}")).collect();
        many.push("sre".to_owned());
        assert_eq!(
            mapping.grant(&many),
            Err(SignInRefusal::TooManyGroups(10_001))
        );
        assert_eq!(
            mapping.grant(&["x".repeat(257)]),
            Err(SignInRefusal::GroupNameTooLong)
        );
    }

    #[test]
    fn a_bad_mapping_says_which_entry() {
        for bad in ["sre", "sre=owner", "=responder", "sre=responder:not a name"] {
            let error = GroupMapping::parse(bad, None).expect_err(bad).to_string();
            assert!(error.contains("PROVIDER_GROUP=ROLE"), "{bad}: {error}");
        }
        assert_eq!(
            GroupMapping::parse(" , ", None).map(|mapping| mapping.entries.len()),
            Ok(0)
        );
    }

    #[test]
    fn usernames_come_from_the_claims_and_are_always_valid() {
        let granted = Granted {
            role: Role::Viewer,
            groups: Vec::new(),
        };
        let person = |preferred: Option<&str>, email: Option<&str>| {
            ProviderPerson::new(
                "https://idp",
                "sub-1",
                email,
                true,
                preferred,
                granted.clone(),
            )
            .username
        };
        assert_eq!(person(Some("rita"), Some("r@example.com")), "rita");
        assert_eq!(person(None, Some("Rita.M@Example.com")), "rita.m");
        assert_eq!(person(Some("Rita Müller"), None), "Rita-M-ller");
        assert_eq!(person(Some(""), None), "sub-1");
        assert!(check_username(&person(Some(&"x".repeat(500)), None)).is_ok());
        assert_eq!(
            person(Some(&"x".repeat(500)), None).len(),
            55,
            "room for -NUMBER"
        );
        let unverified = ProviderPerson::new(
            "https://idp",
            "sub-1",
            Some("ceo@example.com"),
            false,
            None,
            granted.clone(),
        );
        assert_eq!(
            unverified.username, "sub-1",
            "an unverified e-mail names nobody"
        );
    }
}
