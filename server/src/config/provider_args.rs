//! `anteroom serve`'s sign-in options: the company's OpenID Connect provider, how its groups map to Anteroom's
//! roles and groups, and whether local passwords still sign in (docs/operations.md#sign-in-through-an-identity-provider).

use clap::Args;

#[derive(Clone, Args)]
pub struct ProviderArgs {
    /// The OpenID Connect provider's issuer URL (its discovery document is ISSUER/.well-known/openid-configuration).
    #[arg(long, env = "ANTEROOM_OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,

    /// The client id Anteroom is registered with at the provider.
    #[arg(long, env = "ANTEROOM_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,

    /// The client secret (or ANTEROOM_OIDC_CLIENT_SECRET_FILE).
    #[arg(long, env = "ANTEROOM_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub oidc_client_secret: Option<String>,

    /// A file holding the client secret (a mounted secret), read at start.
    #[arg(long, env = "ANTEROOM_OIDC_CLIENT_SECRET_FILE")]
    pub oidc_client_secret_file: Option<std::path::PathBuf>,

    /// Scopes asked for, space-separated (`openid` is always asked; add `groups` where the provider ties the
    /// groups claim to it).
    #[arg(
        long,
        env = "ANTEROOM_OIDC_SCOPES",
        default_value = "openid email profile"
    )]
    pub oidc_scopes: String,

    /// The ID token claim that lists the person's groups.
    #[arg(long, env = "ANTEROOM_OIDC_GROUPS_CLAIM", default_value = "groups")]
    pub oidc_groups_claim: String,

    /// Provider groups to Anteroom roles and groups: `sre=responder:sre, platform-admins=admin`.
    #[arg(long, env = "ANTEROOM_OIDC_GROUPS")]
    pub oidc_groups: Option<String>,

    /// The role of a person in none of the mapped groups: `viewer`, `responder`, `admin`, or `none` (they
    /// may not sign in).
    #[arg(long, env = "ANTEROOM_OIDC_DEFAULT_ROLE", default_value = "viewer")]
    pub oidc_default_role: String,

    /// The provider's name on the sign-in button ("Sign in with NAME").
    #[arg(
        long,
        env = "ANTEROOM_OIDC_NAME",
        default_value = "your company account"
    )]
    pub oidc_name: String,

    /// Minutes a provider sign-in lasts before the browser goes back through the provider, which reads the
    /// person's groups again (a person removed from a group loses it within this time).
    #[arg(long, env = "ANTEROOM_OIDC_RECHECK_MINUTES", default_value_t = 60,
          value_parser = clap::value_parser!(u32).range(1..=1440))]
    pub oidc_recheck_minutes: u32,

    /// Hours after a person's last sign-in through the provider during which they may answer outside a page (a
    /// mail's answer link, a Slack button, a push notification's action): a person removed at the provider stops
    /// answering there within this time, or at once when they sign in again.
    #[arg(long, env = "ANTEROOM_OIDC_ANSWER_ELSEWHERE_HOURS", default_value_t = 168,
          value_parser = clap::value_parser!(u32).range(1..=8_760))]
    pub oidc_answer_elsewhere_hours: u32,

    /// Minutes since the person last authenticated at the provider beyond which a sign-in is refused (sent as
    /// `max_age`; the ID token's `auth_time` is checked). Unset: the provider's own session decides.
    #[arg(long, env = "ANTEROOM_OIDC_MAX_AGE_MINUTES",
          value_parser = clap::value_parser!(u32).range(1..=10_080))]
    pub oidc_max_age_minutes: Option<u32>,

    /// What the provider must ask at every sign-in, sent as `prompt`: `login` (the person's credentials every
    /// time, whatever the provider's own session), `select_account`, `consent`. Unset: the provider decides.
    #[arg(long, env = "ANTEROOM_OIDC_PROMPT")]
    pub oidc_prompt: Option<String>,

    /// Whether local usernames and passwords sign in (`false` once everyone comes through the provider).
    #[arg(long, env = "ANTEROOM_PASSWORD_SIGN_IN", default_value_t = true, action = clap::ArgAction::Set)]
    pub password_sign_in: bool,
}

impl std::fmt::Debug for ProviderArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderArgs")
            .field("oidc_issuer", &self.oidc_issuer)
            .field("oidc_client_id", &self.oidc_client_id)
            .field(
                "oidc_client_secret",
                &self.oidc_client_secret.as_ref().map(|_| "(hidden)"),
            )
            .field("oidc_client_secret_file", &self.oidc_client_secret_file)
            .field("password_sign_in", &self.password_sign_in)
            .finish_non_exhaustive()
    }
}
