//! Standing answers as a session page lists, pauses and revokes them.

use super::*;

impl PageData {
    /// Ends standing answer `id`, listed on session `session`'s page, for a person who may answer there.
    pub async fn revoke_standing(
        &self,
        viewer: &Viewer,
        session: &str,
        id: i64,
        csrf: &str,
    ) -> Result<(), String> {
        self.listed_standing(viewer, session, id, csrf).await?;
        self.store
            .revoke_standing_answer(id, &viewer.principal.label())
            .await
            .map(drop)
            .map_err(said)
    }

    /// Pauses or resumes standing answer `id`, listed on session `session`'s page.
    pub async fn pause_standing(
        &self,
        viewer: &Viewer,
        session: &str,
        id: i64,
        paused: bool,
        csrf: &str,
    ) -> Result<(), String> {
        self.listed_standing(viewer, session, id, csrf).await?;
        self.store
            .pause_standing_answer(id, paused, &viewer.principal.label())
            .await
            .map(drop)
            .map_err(said)
    }

    /// Checks that `viewer` may change standing answer `id`, listed on session `session`'s page.
    async fn listed_standing(
        &self,
        viewer: &Viewer,
        session: &str,
        id: i64,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        if !viewer.can_answer() {
            return Err("You have the viewer role: you cannot change standing answers.".to_owned());
        }
        let session = SessionId::parse(session).map_err(|error| error.to_string())?;
        let listed = self.store.standing_answers(&session).await.map_err(said)?;
        if listed.iter().any(|rule| rule.id == id) {
            Ok(())
        } else {
            Err(format!("Standing answer #{id} is not in force here."))
        }
    }
}
