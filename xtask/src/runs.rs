//! Several fresh runs of a benchmark read as one table: for each row, every run's figures and how many runs met
//! its goal, never the best run alone.

use std::collections::BTreeMap;

/// One Markdown table of a benchmark's printout: its header, and its rows in the order they came.
#[derive(Debug)]
struct Table {
    header: Vec<String>,
    /// How many leading cells name a row (1, or 2 for Lighthouse's page and form factor).
    key_columns: usize,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// The name `row` is found by in another run's table.
    fn key(&self, row: &[String]) -> String {
        row.iter()
            .take(self.key_columns)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

/// The cells of a Markdown table line, trimmed; `None` for a line that is not one.
fn cells(line: &str) -> Option<Vec<String>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    Some(
        inner
            .split('|')
            .map(|cell| cell.trim().to_owned())
            .collect(),
    )
}

/// The tables of one run's printout, by header. A row is named by its first cell, and by its second as well
/// when that says which variant it is (Lighthouse's form factor), so the same row of each run lines up. A line
/// followed by a `| ---` separator starts a new table, even right after another one's rows.
fn tables(output: &str) -> Vec<Table> {
    let lines: Vec<&str> = output.lines().collect();
    let starts_table = |at: usize| {
        cells(lines[at]).is_some_and(|header| header.len() >= 2)
            && lines
                .get(at + 1)
                .is_some_and(|next| next.trim_start().starts_with("| ---"))
    };
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        if !starts_table(at) {
            at += 1;
            continue;
        }
        let header = cells(lines[at]).unwrap_or_default();
        let keyed_by_two = header.get(1).is_some_and(|name| name == "form factor");
        let mut table = Table {
            header,
            key_columns: if keyed_by_two { 2 } else { 1 },
            rows: Vec::new(),
        };
        at += 2;
        while at < lines.len() && !starts_table(at) {
            let Some(row) = cells(lines[at]) else { break };
            table.rows.push(row);
            at += 1;
        }
        found.push(table);
    }
    found
}

/// Whether a `met` cell says the goal was met.
fn met(cell: &str) -> bool {
    cell.trim_matches('*').eq_ignore_ascii_case("yes")
}

/// The tables of `outputs` (one printout per run) combined row by row: a cell every run agrees on is shown once,
/// one that differs as each run's value joined by "; " (run 1 first), and the last column, the goal's verdict,
/// as how many of the runs met it. A row missing from a run counts as not met in it.
pub fn combine(outputs: &[String]) -> String {
    let runs: Vec<Vec<Table>> = outputs.iter().map(|output| tables(output)).collect();
    let Some(first) = runs.first() else {
        return String::new();
    };
    let mut printed = String::new();
    for table in first {
        let others: Vec<BTreeMap<String, &Vec<String>>> = runs
            .iter()
            .map(|tables| {
                tables
                    .iter()
                    .filter(|other| other.header == table.header)
                    .flat_map(|other| other.rows.iter().map(|row| (other.key(row), row)))
                    .collect()
            })
            .collect();
        let last = table.header.len() - 1;
        printed.push_str(&format!("| {} |\n", table.header.join(" | ")));
        printed.push_str(&format!("|{}\n", " --- |".repeat(table.header.len())));
        for named in &table.rows {
            let key = table.key(named);
            let each: Vec<Option<&Vec<String>>> =
                others.iter().map(|rows| rows.get(&key).copied()).collect();
            let mut line = Vec::with_capacity(table.header.len());
            line.extend(named.iter().take(table.key_columns).cloned());
            for column in table.key_columns..last {
                let values: Vec<&str> = each
                    .iter()
                    .map(|row| {
                        row.and_then(|row| row.get(column))
                            .map_or("–", String::as_str)
                    })
                    .collect();
                if values.iter().all(|value| *value == values[0]) {
                    line.push(values[0].to_owned());
                } else {
                    line.push(values.join("; "));
                }
            }
            let verdicts: Vec<&str> = each
                .iter()
                .map(|row| row.and_then(|row| row.get(last)).map_or("", String::as_str))
                .collect();
            let verdict = if verdicts.iter().all(|cell| *cell == "—" || *cell == "-") {
                "—".to_owned()
            } else {
                let count = verdicts.iter().filter(|cell| met(cell)).count();
                format!("{count} of {}", outputs.len())
            };
            line.push(verdict);
            printed.push_str(&format!("| {} |\n", line.join(" | ")));
        }
        printed.push('\n');
    }
    printed
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN_1: &str = "bench: polls\n\
        | figure | measured | ratio | goal | met |\n\
        | --- | --- | --- | --- | --- |\n\
        | polls/s | 100/s | 0.62 | ≥ 0.6 | yes |\n\
        | memory | 20 MiB | — | ≤ 40 MB | yes |\n\
        | events | 7 | — | — | — |\n\
        done\n\
        | page | form factor | performance | met |\n\
        | --- | --- | ---: | --- |\n\
        | queue | mobile | 99 | yes |\n\
        | queue | desktop | 100 | yes |\n";
    const RUN_2: &str = "| figure | measured | ratio | goal | met |\n\
        | --- | --- | --- | --- | --- |\n\
        | polls/s | 90/s | 0.55 | ≥ 0.6 | **no** |\n\
        | memory | 20 MiB | — | ≤ 40 MB | yes |\n\
        | events | 7 | — | — | — |\n\
        | page | form factor | performance | met |\n\
        | --- | --- | ---: | --- |\n\
        | queue | desktop | 100 | yes |\n";

    #[test]
    fn each_row_shows_every_run_and_how_many_met_its_goal() {
        let combined = combine(&[RUN_1.to_owned(), RUN_2.to_owned()]);
        let lines: Vec<&str> = combined.lines().collect();
        assert_eq!(lines[0], "| figure | measured | ratio | goal | met |");
        assert_eq!(
            lines[2],
            "| polls/s | 100/s; 90/s | 0.62; 0.55 | ≥ 0.6 | 1 of 2 |"
        );
        assert_eq!(lines[3], "| memory | 20 MiB | — | ≤ 40 MB | 2 of 2 |");
        assert_eq!(
            lines[4], "| events | 7 | — | — | — |",
            "a row with no goal has no verdict"
        );
        // Lighthouse's rows are named by page and form factor; a row a run lacks is not met in it.
        assert!(
            combined.contains("| queue | mobile | 99; – | 1 of 2 |"),
            "{combined}"
        );
        assert!(
            combined.contains("| queue | desktop | 100 | 2 of 2 |"),
            "{combined}"
        );
    }

    #[test]
    fn a_printout_without_tables_combines_to_nothing() {
        assert_eq!(combine(&["no table here".to_owned()]), "");
        assert_eq!(combine(&[]), "");
    }
}
