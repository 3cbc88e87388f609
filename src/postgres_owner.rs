//! Which deployment a PostgreSQL schema's toolgate tables belong to (feature `postgres`): the
//! approval store and the audit sink each claim their tables for one deployment, and refuse
//! another's. Two deployments given one database each listed, answered and ran the other's held
//! calls (an independent attack: deployment B's person approved a call held by A, and it ran in
//! B), and appended to one audit chain.

use postgres::Client;

/// Why a claim was not made.
#[derive(Debug)]
pub(crate) enum ClaimError {
    /// The database failed.
    Db(postgres::Error),
    /// Another deployment holds the tables: its schema.
    Taken { schema: String },
}

impl From<postgres::Error> for ClaimError {
    fn from(error: postgres::Error) -> Self {
        Self::Db(error)
    }
}

impl ClaimError {
    /// What an operator is told when another deployment holds `what` (`approval`, `audit`).
    pub(crate) fn taken_message(what: &str, schema: &str) -> String {
        format!(
            "the {what} tables in schema `{schema}` belong to another deployment: two deployments never share them (each would list, answer and run the other's calls); give this one its own database or schema (`?options=-csearch_path%3Dname`). If they are this deployment's and its request-state key changed (a new `state_key_env`, or two rotations without a start between), give them to it: `DELETE FROM {}.toolgate_owners WHERE store = '{what}'`",
            quoted_identifier(schema)
        )
    }
}

/// `name` as a PostgreSQL identifier: in double quotes, each inside doubled, so a schema named
/// `Prod`, `my schema` or `x; DELETE …` is that schema in the statement an operator pastes (bare,
/// `Prod` folded to another deployment's `prod` and deleted its owner row: an independent attack).
fn quoted_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Claims `store`'s tables in the connection's current schema for `owners[0]`: done when nobody
/// holds them or one of `owners` does (the others are earlier names of the same deployment — a
/// key rotated —, replaced by the first); [`ClaimError::Taken`] when another does. An empty
/// `owners` claims nothing.
pub(crate) fn claim(client: &mut Client, store: &str, owners: &[String]) -> Result<(), ClaimError> {
    let Some(first) = owners.first() else {
        return Ok(());
    };
    let mut transaction = client.transaction()?;
    transaction.execute(
        "SELECT pg_advisory_xact_lock(hashtext('toolgate owners ' || current_schema()))",
        &[],
    )?;
    transaction.batch_execute(
        "CREATE TABLE IF NOT EXISTS toolgate_owners (
            store text PRIMARY KEY,
            owner text NOT NULL,
            claimed_at timestamptz NOT NULL DEFAULT now()
        )",
    )?;
    let held: Option<String> = transaction
        .query_opt(
            "SELECT owner FROM toolgate_owners WHERE store = $1",
            &[&store],
        )?
        .map(|row| row.get(0));
    match held {
        None => {
            transaction.execute(
                "INSERT INTO toolgate_owners (store, owner) VALUES ($1, $2)",
                &[&store, first],
            )?;
        }
        Some(owner) if owner == *first => {}
        Some(owner) if owners.contains(&owner) => {
            transaction.execute(
                "UPDATE toolgate_owners SET owner = $2, claimed_at = now() WHERE store = $1",
                &[&store, first],
            )?;
        }
        Some(_) => {
            let schema: String = transaction
                .query_one("SELECT current_schema()", &[])?
                .get(0);
            return Err(ClaimError::Taken { schema });
        }
    }
    transaction.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::ClaimError;

    #[test]
    fn the_statement_handing_tables_over_names_the_schema_as_an_identifier() {
        for (schema, named) in [
            ("prod", "\"prod\""),
            ("Prod", "\"Prod\""),
            ("my schema", "\"my schema\""),
            ("a\"b", "\"a\"\"b\""),
            (
                "x; DELETE FROM prod.toolgate_owners; --",
                "\"x; DELETE FROM prod.toolgate_owners; --\"",
            ),
        ] {
            let message = ClaimError::taken_message("approval", schema);
            assert!(
                message.contains(&format!(
                    "`DELETE FROM {named}.toolgate_owners WHERE store = 'approval'`"
                )),
                "{message}"
            );
        }
    }
}
