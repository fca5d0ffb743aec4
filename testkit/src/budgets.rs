//! The counted budgets of `budgets.toml` (the workspace root), as the tests check them: a measured count above
//! its limit fails the test with the budget's name, the count, the limit and where to change it.

use std::{collections::BTreeMap, path::PathBuf, sync::Mutex};

/// The file every budget lives in, read by these tests and by `cargo xtask test`.
pub fn budgets_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|root| root.join("budgets.toml"))
        .unwrap_or_else(|| PathBuf::from("budgets.toml"))
}

/// The budgets of one table of `budgets.toml` (`[database]`…), and the counts measured against them.
pub struct Budgets {
    table: String,
    limits: BTreeMap<String, i64>,
    measured: Mutex<Vec<(String, u64)>>,
}

impl Budgets {
    /// The budgets under `[table.NAME]` (each with `limit` and `why`). A missing file or table fails the test.
    pub fn load(table: &str) -> Self {
        let path = budgets_file();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let document: toml::Table = text
            .parse()
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let entries = document
            .get(table)
            .and_then(toml::Value::as_table)
            .unwrap_or_else(|| panic!("{} has no [{table}] table", path.display()));
        let limits = entries
            .iter()
            .map(|(name, entry)| {
                let limit = entry
                    .get("limit")
                    .and_then(toml::Value::as_integer)
                    .unwrap_or_else(|| panic!("[{table}.{name}] needs an integer `limit`"));
                assert!(
                    entry
                        .get("why")
                        .and_then(toml::Value::as_str)
                        .is_some_and(|why| !why.trim().is_empty()),
                    "[{table}.{name}] needs a `why`: the reason for that number"
                );
                (name.clone(), limit)
            })
            .collect();
        Self {
            table: table.to_owned(),
            limits,
            measured: Mutex::new(Vec::new()),
        }
    }

    /// Notes `count` against the budget `name` (checked by [`Budgets::check`]).
    pub fn measure(&self, name: &str, count: u64) {
        self.measured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((name.to_owned(), count));
    }

    /// Prints every count against its limit, then fails when any is over its limit or has no budget.
    #[expect(
        clippy::print_stdout,
        reason = "the counts beside their limits, in the test's output"
    )]
    pub fn check(&self, context: &str) {
        let measured = self
            .measured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let mut exceeded = Vec::new();
        for (name, count) in &measured {
            let Some(limit) = self.limits.get(name) else {
                exceeded.push(format!(
                    "{}.{name}: measured {count}, but budgets.toml has no [{}.{name}] (add it, with its why)",
                    self.table, self.table
                ));
                continue;
            };
            let within = i64::try_from(*count).is_ok_and(|count| count <= *limit);
            println!(
                "budget {context} {}.{name}: {count} (limit {limit}){}",
                self.table,
                if within { "" } else { "  EXCEEDED" }
            );
            if !within {
                exceeded.push(format!(
                    "{}.{name}: measured {count}, limit {limit}",
                    self.table
                ));
            }
        }
        assert!(
            exceeded.is_empty(),
            "budgets exceeded ({context}):\n  {}\nA limit is raised only in {} ([{}.NAME] limit), with the reason \
             in its `why` and in the same commit.",
            exceeded.join("\n  "),
            budgets_file().display(),
            self.table
        );
    }
}
