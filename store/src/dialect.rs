//! What differs between the two databases, and nothing else: how a write transaction begins, the row-lock
//! clause, how a statement's values reach the driver, and which migrations run.
//!
//! The store's behaviour is written once, generic over [`Dialect`]. Statements carry their values as
//! [`Param`]s (every column is text, a 64-bit integer or a boolean, docs/operations.md#databases), so the
//! generic code needs no driver trait bounds; each dialect binds them for its own driver.

use std::{borrow::Cow, future::Future};

use sqlx::{
    Arguments, Database, Encode, FromRow, Pool, Transaction, Type,
    error::BoxDynError,
    migrate::{MigrateError, Migrator},
    postgres::PgRow,
    sqlite::SqliteRow,
};

use crate::Backend;

/// One value bound to a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Int(Option<i64>),
    Text(Option<String>),
    Bool(bool),
}

impl Param {
    /// The value as JSON, for statements that read their rows from one JSON parameter (SQLite's `json_each`):
    /// a boolean becomes `true`/`false`, which SQLite's `->>` reads back as 1/0, as the column stores it.
    pub fn into_json(self) -> serde_json::Value {
        match self {
            Self::Int(value) => value.map_or(serde_json::Value::Null, serde_json::Value::from),
            Self::Text(value) => value.map_or(serde_json::Value::Null, serde_json::Value::from),
            Self::Bool(value) => serde_json::Value::Bool(value),
        }
    }
}

impl Statement {
    /// `sql` with one parameter: `rows` as one JSON array of objects keyed by `columns`, each row's values in the
    /// columns' order, for a statement that reads them with PostgreSQL's `json_populate_recordset`
    /// (`sql::insert_from_records`). `what` names the rows in the error a value JSON cannot hold would give.
    pub fn from_records(
        sql: &'static str,
        columns: &[&str],
        rows: impl IntoIterator<Item = Vec<Param>>,
        what: &str,
    ) -> Result<Self, crate::StoreError> {
        let records: Vec<serde_json::Map<String, serde_json::Value>> = rows
            .into_iter()
            .map(|row| {
                columns
                    .iter()
                    .map(|column| (*column).to_owned())
                    .zip(row.into_iter().map(Param::into_json))
                    .collect()
            })
            .collect();
        let json = serde_json::to_string(&records)
            .map_err(|error| crate::StoreError::Corrupt(format!("{what}: {error}")))?;
        Ok(Self::new(sql).bind(json))
    }
}

impl From<i64> for Param {
    fn from(value: i64) -> Self {
        Self::Int(Some(value))
    }
}

impl From<Option<i64>> for Param {
    fn from(value: Option<i64>) -> Self {
        Self::Int(value)
    }
}

impl From<String> for Param {
    fn from(value: String) -> Self {
        Self::Text(Some(value))
    }
}

impl From<&str> for Param {
    fn from(value: &str) -> Self {
        Self::Text(Some(value.to_owned()))
    }
}

impl From<&String> for Param {
    fn from(value: &String) -> Self {
        Self::Text(Some(value.clone()))
    }
}

impl From<Option<String>> for Param {
    fn from(value: Option<String>) -> Self {
        Self::Text(value)
    }
}

impl From<Option<&str>> for Param {
    fn from(value: Option<&str>) -> Self {
        Self::Text(value.map(str::to_owned))
    }
}

impl From<bool> for Param {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}

/// The most placeholders a statement kept prepared may have ([`Statement::kept_prepared`]): every fixed text
/// has fewer, and a batch of a few rows stays cheap to repeat.
pub const KEPT_PREPARED_PARAMS: usize = 64;

/// SQL text (with `$N` placeholders, which both backends accept) and the values for its placeholders.
#[derive(Debug, Clone)]
pub struct Statement {
    sql: Cow<'static, str>,
    params: Vec<Param>,
}

impl Statement {
    pub fn new(sql: impl Into<Cow<'static, str>>) -> Self {
        Self {
            sql: sql.into(),
            params: Vec::new(),
        }
    }

    /// Binds the next placeholder.
    pub fn bind(mut self, value: impl Into<Param>) -> Self {
        self.params.push(value.into());
        self
    }

    /// Binds the next placeholders in order.
    pub fn bind_all(mut self, values: impl IntoIterator<Item = Param>) -> Self {
        self.params.extend(values);
        self
    }

    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// Whether the statement may change the database: anything but a plain `SELECT` (an `UPDATE … RETURNING`, a
    /// `WITH` that writes).
    pub fn may_write(&self) -> bool {
        !self
            .sql
            .trim_start()
            .get(..6)
            .is_some_and(|word| word.eq_ignore_ascii_case("SELECT"))
    }

    /// Whether the driver should keep this statement prepared on its connection for its next use. A batch's
    /// text changes with its number of rows, so a connection's cache of them (100 statements) fills with texts
    /// seldom used again, each holding its text and a type per placeholder, here and in PostgreSQL's backend:
    /// a 10-minute PostgreSQL soak grew each instance by 25 MB of them (heaptrack). A batch is prepared for its
    /// one use instead (one more round trip on PostgreSQL, for a statement of at least 65 values).
    pub fn kept_prepared(&self) -> bool {
        self.params.len() <= KEPT_PREPARED_PARAMS
    }

    /// The statement's parts, for a dialect to hand to its driver: the text, its values, and whether to keep it
    /// prepared ([`Statement::kept_prepared`]).
    pub fn into_parts(self) -> (Cow<'static, str>, Vec<Param>, bool) {
        let kept = self.kept_prepared();
        (self.sql, self.params, kept)
    }
}

/// A row type both drivers can decode.
pub trait Record:
    for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin + 'static
{
}

impl<T> Record for T where
    T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin + 'static
{
}

/// A database connection of dialect `D`.
pub type Connection<D> = <<D as Dialect>::Db as Database>::Connection;

/// How one database engine runs the store's statements.
pub trait Dialect: Send + Sync + 'static {
    type Db: Database;

    const BACKEND: Backend;

    /// Appended to a read that precedes a write in the same transaction.
    const ROW_LOCK: &'static str;

    /// Opens a transaction that may write.
    fn begin_write(
        pool: &Pool<Self::Db>,
    ) -> impl Future<Output = sqlx::Result<Transaction<'static, Self::Db>>> + Send + '_;

    /// Runs a statement; returns how many rows it changed.
    fn execute(
        connection: &mut Connection<Self>,
        statement: Statement,
    ) -> impl Future<Output = sqlx::Result<u64>> + Send + '_;

    fn fetch_all<R: Record>(
        connection: &mut Connection<Self>,
        statement: Statement,
    ) -> impl Future<Output = sqlx::Result<Vec<R>>> + Send + '_;

    fn fetch_optional<R: Record>(
        connection: &mut Connection<Self>,
        statement: Statement,
    ) -> impl Future<Output = sqlx::Result<Option<R>>> + Send + '_;

    /// Applies this backend's migrations under the database's migration lock.
    fn migrate(pool: &Pool<Self::Db>)
    -> impl Future<Output = Result<(), MigrateError>> + Send + '_;

    /// This backend's migrations (`migrations/<backend>`), as compiled into the binary.
    fn migrator() -> &'static Migrator;
}

/// A driver's argument list holding `params`.
pub(crate) fn arguments<'q, DB>(params: Vec<Param>) -> sqlx::Result<DB::Arguments<'q>>
where
    DB: Database,
    Option<i64>: Encode<'q, DB> + Type<DB>,
    Option<String>: Encode<'q, DB> + Type<DB>,
    bool: Encode<'q, DB> + Type<DB>,
{
    let mut arguments = DB::Arguments::default();
    arguments.reserve(params.len(), 0);
    for param in params {
        let added: Result<(), BoxDynError> = match param {
            Param::Int(value) => arguments.add(value),
            Param::Text(value) => arguments.add(value),
            Param::Bool(value) => arguments.add(value),
        };
        added.map_err(sqlx::Error::Encode)?;
    }
    Ok(arguments)
}

/// `$first, $first+1, …` for `count` placeholders.
pub fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `($1, …, $columns), (…)` for `rows` rows of `columns` values each.
pub fn value_rows(rows: usize, columns: usize) -> String {
    (0..rows)
        .map(|row| format!("({})", placeholders(row * columns + 1, columns)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_number_from_the_given_start() {
        assert_eq!(placeholders(3, 3), "$3, $4, $5");
        assert_eq!(placeholders(1, 0), "");
    }

    #[test]
    fn only_a_plain_select_is_taken_to_read_alone() {
        assert!(!Statement::new("  select * FROM rounds").may_write());
        assert!(Statement::new("UPDATE rounds SET status = 'delivered' RETURNING *").may_write());
        assert!(Statement::new("INSERT INTO t VALUES ($1)").may_write());
        assert!(
            Statement::new("WITH m AS (UPDATE t SET a = 1 RETURNING a) SELECT a FROM m")
                .may_write()
        );
        assert!(Statement::new("SEL").may_write());
    }

    #[test]
    fn value_rows_number_every_value_once() {
        assert_eq!(value_rows(2, 2), "($1, $2), ($3, $4)");
    }

    #[test]
    fn statements_keep_their_values_in_bind_order() {
        let (sql, params, _) = Statement::new("SELECT $1, $2, $3")
            .bind(1_i64)
            .bind("two")
            .bind(Option::<i64>::None)
            .into_parts();
        assert_eq!(sql, "SELECT $1, $2, $3");
        assert_eq!(
            params,
            vec![
                Param::Int(Some(1)),
                Param::Text(Some("two".into())),
                Param::Int(None)
            ]
        );
    }
}
