//! The profile page's data and settings: e-mail, quiet hours, digests, push browsers, the Slack link and the
//! browsers the person is signed in on and their passkeys.

use super::*;

impl PageData {
    /// The signed-in person's reach settings and the browsers they are signed in on (`this_browser`: the
    /// handle of the one asking).
    pub async fn profile(
        &self,
        viewer: &Viewer,
        this_browser: Option<&str>,
    ) -> StoreResult<ProfileView> {
        let id = &viewer.principal.id;
        let email = self.store.user_email(id).await?;
        let preference = self.store.email_preference(id).await?;
        let browsers = self.store.push_subscriptions(id).await?;
        let quiet = self.store.quiet_hours(id).await?;
        let time_zone = self.store.time_zone(id).await?;
        let digest_after = self.store.digest_after(id).await?;
        let slack_links = self.store.slack_links(id).await?;
        let sign_ins = self.store.browser_sign_ins(id).await?;
        let passkeys = self.store.passkeys(id).await?;
        Ok(ProfileView {
            passkeys: passkeys
                .into_iter()
                .map(|passkey| PasskeyRow {
                    id: passkey.id,
                    name: passkey.name,
                    added_ms: passkey.added_at.timestamp_millis(),
                    used_ms: passkey.used_at.map(|at| at.timestamp_millis()),
                })
                .collect(),
            sign_ins: sign_ins
                .into_iter()
                .map(|sign_in| SignInRow {
                    this_browser: this_browser == Some(sign_in.handle.as_str()),
                    handle: sign_in.handle,
                    device: sign_in.device.unwrap_or_else(|| "A browser".to_owned()),
                    seen_ms: sign_in.seen_at.map(|at| at.timestamp_millis()),
                })
                .collect(),
            digest_after,
            slack_links: slack_links
                .into_iter()
                .map(|link| SlackLinkRow {
                    slack_user: link.slack_user,
                    linked_ms: link.linked_at.timestamp_millis(),
                })
                .collect(),
            quiet_from: quiet
                .as_ref()
                .map(|q| clock_minute(q.from_minute))
                .unwrap_or_default(),
            quiet_until: quiet
                .as_ref()
                .map(|q| clock_minute(q.until_minute))
                .unwrap_or_default(),
            time_zone: time_zone.unwrap_or_default(),
            username: viewer.principal.name.clone(),
            role: viewer.principal.role.as_str().to_owned(),
            email,
            email_questions: preference.questions.as_str().to_owned(),
            email_after_minutes: preference.after_minutes,
            browsers: browsers
                .into_iter()
                .map(|browser| BrowserRow {
                    id: browser.id,
                    device: browser.device,
                    created_ms: browser.created_at.timestamp_millis(),
                })
                .collect(),
            csrf: viewer.csrf.clone(),
        })
    }

    /// Saves the person's e-mail and which questions reach them by mail.
    pub async fn save_email(
        &self,
        viewer: &Viewer,
        email: &str,
        questions: &str,
        after_minutes: i64,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        let questions = EmailQuestions::parse(questions).ok_or_else(|| {
            "Choose which questions to mail: none, every one, or unanswered ones.".to_owned()
        })?;
        if !(0..=EMAIL_AFTER_MINUTES_MAX).contains(&after_minutes) {
            return Err(format!(
                "Wait between 0 and {EMAIL_AFTER_MINUTES_MAX} minutes."
            ));
        }
        let email = Some(email.trim()).filter(|email| !email.is_empty());
        if email.is_none() && questions != EmailQuestions::Off {
            return Err("Give an e-mail address to get questions by mail.".to_owned());
        }
        let id = &viewer.principal.id;
        self.store.set_user_email(id, email).await.map_err(said)?;
        self.store
            .set_email_preference(
                id,
                EmailPreference {
                    questions,
                    after_minutes,
                },
            )
            .await
            .map(drop)
            .map_err(said)
    }

    /// Sets the person's time zone (empty: the browser's) and quiet hours (both times empty: none), which
    /// count in that zone.
    pub async fn save_quiet(
        &self,
        viewer: &Viewer,
        from: &str,
        until: &str,
        time_zone: &str,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        let time_zone = time_zone.trim();
        if !time_zone.is_empty() && jiff::tz::TimeZone::get(time_zone).is_err() {
            return Err(format!(
                "This server does not know the time zone {time_zone}."
            ));
        }
        let quiet = if from.trim().is_empty() && until.trim().is_empty() {
            None
        } else {
            let (Some(from), Some(until)) = (parse_clock_minute(from), parse_clock_minute(until))
            else {
                return Err(
                    "Give both times of the quiet hours as HH:MM (or neither, for none)."
                        .to_owned(),
                );
            };
            Some(
                QuietHours::new(from, until, time_zone)
                    .map_err(|error| error.message().to_owned())?,
            )
        };
        self.store
            .set_time_zone(
                &viewer.principal.id,
                (!time_zone.is_empty()).then_some(time_zone),
            )
            .await
            .map_err(said)?;
        self.store
            .set_quiet_hours(&viewer.principal.id, quiet.as_ref())
            .await
            .map(drop)
            .map_err(said)
    }

    /// Turns push off in one of the person's browsers.
    pub async fn remove_browser(
        &self,
        viewer: &Viewer,
        id: &str,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        match self
            .store
            .remove_push_subscription(id, Some(&viewer.principal.id))
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err("That browser no longer has push on.".to_owned()),
            Err(error) => Err(said(error)),
        }
    }

    /// Sets after how many questions a minute the person's pushes and mails are gathered into a digest.
    pub async fn save_digest(&self, viewer: &Viewer, after: u32, csrf: &str) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        if after > DIGEST_AFTER_MAX {
            return Err(format!(
                "Choose between 0 (never gather) and {DIGEST_AFTER_MAX} questions a minute."
            ));
        }
        self.store
            .set_digest_after(&viewer.principal.id, after)
            .await
            .map(drop)
            .map_err(said)
    }

    /// The Slack account a live link offer names (nothing is taken by reading it).
    pub async fn slack_link_offer(&self, token: &str) -> StoreResult<Option<String>> {
        self.store.slack_link_offer(&hash_secret(token)).await
    }

    /// Takes a link offer: its Slack account answers as this person from now on. Returns the account.
    pub async fn link_slack(
        &self,
        viewer: &Viewer,
        token: &str,
        csrf: &str,
    ) -> Result<String, String> {
        same_sign_in(viewer, csrf)?;
        match self
            .store
            .link_slack(&hash_secret(token), &viewer.principal.id)
            .await
        {
            Ok(Some(link)) => Ok(link.slack_user),
            Ok(None) => Err(
                "This link was used already or has expired. Click a button in Slack again for a new one."
                    .to_owned(),
            ),
            Err(error) => Err(said(error)),
        }
    }

    /// Unlinks one of the person's Slack accounts.
    pub async fn unlink_slack(
        &self,
        viewer: &Viewer,
        slack_user: &str,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        match self
            .store
            .unlink_slack(slack_user, &viewer.principal.id)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err("That Slack account is not linked to you.".to_owned()),
            Err(error) => Err(said(error)),
        }
    }
}
