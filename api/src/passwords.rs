//! Password hashing with Argon2id (the `argon2` crate's defaults), in PHC strings that carry their own salt,
//! run on a few threads of its own with working memory each of them keeps.

use std::{
    cell::RefCell,
    sync::{Arc, Mutex, mpsc},
};

use tokio::sync::{Semaphore, oneshot};

use argon2::{
    Algorithm, Argon2, Block, Params, Version,
    password_hash::{
        self, Decimal, Ident, Output, PasswordHash, PasswordHasher, PasswordVerifier, Salt,
        SaltString, rand_core::OsRng,
    },
};

/// Hashes a new password. Slow by design: call it off the async executor.
pub fn hash(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    ReusingArgon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|error| anyhow::anyhow!("cannot hash the password: {error}"))
}

/// Whether `password` matches the stored hash (an unreadable hash matches nothing).
pub fn verify(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|parsed| {
        ReusingArgon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

thread_local! {
    /// This thread's Argon2 working memory, kept between hashes.
    static WORKING_MEMORY: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
}

/// Argon2 whose ~19 MiB of working memory is allocated once per thread and reused. `argon2` allocates it
/// afresh for every hash; glibc then serves the next one from its heap instead of a fresh mapping and keeps
/// it, so a sign-in flood grew the process by ~19 MiB per hash (to ~460 MiB) although only two ran at once.
/// The PHC encoding and the constant-time comparison stay the crate's (`PasswordHasher`/`PasswordVerifier`).
#[derive(Default)]
struct ReusingArgon2 {
    algorithm: Algorithm,
    version: Version,
    params: Params,
}

impl PasswordHasher for ReusingArgon2 {
    type Params = Params;

    fn hash_password<'a>(
        &self,
        password: &[u8],
        salt: impl Into<Salt<'a>>,
    ) -> password_hash::Result<PasswordHash<'a>> {
        let salt = salt.into();
        let mut salt_buffer = [0_u8; 64];
        let salt_bytes = salt.decode_b64(&mut salt_buffer)?;
        let argon2 = Argon2::new(self.algorithm, self.version, self.params.clone());
        let output_len = self
            .params
            .output_len()
            .unwrap_or(Params::DEFAULT_OUTPUT_LEN);
        let output = Output::init_with(output_len, |out| {
            WORKING_MEMORY.with_borrow_mut(|memory| {
                let blocks = self.params.block_count();
                if memory.len() < blocks {
                    memory.resize(blocks, Block::default());
                }
                argon2.hash_password_into_with_memory(
                    password,
                    salt_bytes,
                    out,
                    &mut memory[..blocks],
                )
            })?;
            Ok(())
        })?;
        Ok(PasswordHash {
            algorithm: self.algorithm.ident(),
            version: Some(self.version.into()),
            params: (&self.params).try_into()?,
            salt: Some(salt),
            hash: Some(output),
        })
    }

    fn hash_password_customized<'a>(
        &self,
        password: &[u8],
        algorithm: Option<Ident<'a>>,
        version: Option<Decimal>,
        params: Params,
        salt: impl Into<Salt<'a>>,
    ) -> password_hash::Result<PasswordHash<'a>> {
        Self {
            algorithm: algorithm
                .map(Algorithm::try_from)
                .transpose()?
                .unwrap_or_default(),
            version: version
                .map(Version::try_from)
                .transpose()?
                .unwrap_or_default(),
            params,
        }
        .hash_password(password, salt)
    }
}

/// A hash to verify against when the username is unknown, so a wrong name costs as long as a wrong password.
pub fn decoy() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash("decoy password that matches nothing").unwrap_or_default())
}

type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of threads (one per core) that run the hashing, and a gate that refuses work at once when all
/// of them are busy. Each hash needs ~19 MiB of working memory: on a pool of its own that memory is reused
/// by the same few threads, where the general blocking pool would spread it over dozens of threads' heaps.
#[derive(Clone)]
pub struct HashingPool {
    jobs: mpsc::Sender<Job>,
    free: Arc<Semaphore>,
}

/// Every hashing thread is busy: answer `429` instead of queueing.
#[derive(Debug)]
pub struct Busy;

impl HashingPool {
    pub fn new(threads: usize) -> Self {
        let threads = threads.max(1);
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for index in 0..threads {
            let queue = queue.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("anteroom-hash-{index}"))
                .spawn(move || {
                    loop {
                        let job = match queue.lock() {
                            Ok(queue) => queue.recv(),
                            Err(poisoned) => poisoned.into_inner().recv(),
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(error) = spawned {
                tracing::error!(%error, "cannot start a password-hashing thread");
            }
        }
        Self {
            jobs,
            free: Arc::new(Semaphore::new(threads)),
        }
    }

    /// One thread per core.
    pub fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// Runs `work` on a hashing thread, or refuses at once when every thread is taken.
    pub async fn try_run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Busy> {
        let slot = self.free.clone().try_acquire_owned().map_err(|_| Busy)?;
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move || {
            let result = work();
            // Free the thread before answering, so a caller that hashes again at once finds it free.
            drop(slot);
            let _ = reply.send(result);
        });
        self.jobs.send(job).map_err(|_| Busy)?;
        answer.await.map_err(|_| Busy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_pool_refuses_at_once() {
        let pool = HashingPool::new(1);
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let busy = {
            let pool = pool.clone();
            tokio::spawn(async move {
                pool.try_run(move || {
                    let _ = started_tx.send(());
                    let _ = release_rx.recv();
                    1
                })
                .await
            })
        };
        tokio::task::spawn_blocking(move || started_rx.recv())
            .await
            .expect("join")
            .expect("started");
        assert!(pool.try_run(|| 2).await.is_err(), "the only thread is busy");
        release_tx.send(()).expect("release");
        assert_eq!(busy.await.expect("join").expect("ran"), 1);
        assert_eq!(pool.try_run(|| 3).await.expect("free again"), 3);
    }

    #[test]
    fn hashes_agree_with_the_argon2_crate_both_ways() {
        let ours = hash("correct horse battery").expect("hash");
        let parsed = PasswordHash::new(&ours).expect("PHC");
        assert!(
            Argon2::default()
                .verify_password(b"correct horse battery", &parsed)
                .is_ok()
        );
        let theirs = Argon2::default()
            .hash_password(b"correct horse battery", &SaltString::generate(&mut OsRng))
            .expect("hash")
            .to_string();
        assert!(verify("correct horse battery", &theirs));
        assert!(!verify("correct horse batter", &theirs));
    }

    #[test]
    fn a_hash_verifies_its_own_password_only() {
        let stored = hash("correct horse battery").expect("hash");
        assert!(stored.starts_with("$argon2id$"));
        assert!(verify("correct horse battery", &stored));
        assert!(!verify("correct horse battery!", &stored));
        assert!(!verify("anything", "not a phc string"));
        assert_ne!(
            stored,
            hash("correct horse battery").expect("hash"),
            "salted"
        );
    }
}
