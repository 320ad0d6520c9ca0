//! Reading URLs: `%XX` escapes, and the one rule for whether a PostgreSQL URL carries a
//! password (the `loopx.toml` check refuses one; the store's messages hide it; the redactor
//! hides its value in everything an agent prints), and the one rule for a URL written down as a
//! project's store ([`store_url_problem`]).

/// `text` with its `%XX` escapes decoded; an invalid escape is kept as it is, and bytes that
/// are not UTF-8 become U+FFFD.
pub fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// The password a PostgreSQL connection URL carries, read as the PostgreSQL client reads it:
/// the credentials run from after `scheme://` to the first `@`, whatever comes before it, and
/// the password is what follows their first `:` (`postgres://u:@h/db` carries an empty one; a
/// `:` written `%3A` is part of the user); a `password` parameter of the query wins over it
/// (its name in any case, so that a spelling the client refuses is still found). Both
/// percent-decoded. A string without a scheme is read as if it had one.
pub fn url_password(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (credentials, after) = match rest.split_once('@') {
        Some((credentials, after)) => (Some(credentials), after),
        None => (None, rest),
    };
    let from_credentials = credentials
        .and_then(|c| c.split_once(':'))
        .map(|(_, password)| percent_decoded(password));
    let query = after.split_once('?').map_or("", |(_, query)| query);
    let from_query = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(name, _)| percent_decoded(name).eq_ignore_ascii_case("password"))
        .map(|(_, value)| percent_decoded(value))
        .next_back();
    from_query.or(from_credentials)
}

/// Whether `url` names a PostgreSQL database (the one store backend a URL can name).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// What is wrong with `url` as a store written down for others to read (`[store] url` in
/// `loopx.toml`, `loopx init --store`): it must name a PostgreSQL database, and carry no
/// password, since the file may be shared and committed and loopx never stores a secret.
/// `LOOPX_STORE_URL`, which lives in one host's environment, needs only the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreUrlProblem {
    NotPostgres,
    Password,
}

impl StoreUrlProblem {
    /// What is wrong ("… is not a PostgreSQL URL"), and what to do instead.
    pub fn words(self) -> (&'static str, &'static str) {
        match self {
            StoreUrlProblem::NotPostgres => (
                "is not a PostgreSQL URL",
                "write postgres://USER@HOST:PORT/DB, or remove [store] to keep the state in .loopx/state.redb",
            ),
            StoreUrlProblem::Password => (
                "holds a password",
                "give it in PGPASSWORD (or the whole URL in LOOPX_STORE_URL on each host); this file may be shared",
            ),
        }
    }
}

/// The rule for a store URL written down ([`StoreUrlProblem`]); `None` when it may be.
pub fn store_url_problem(url: &str) -> Option<StoreUrlProblem> {
    if !is_postgres_url(url) {
        Some(StoreUrlProblem::NotPostgres)
    } else if url_password(url).is_some() {
        Some(StoreUrlProblem::Password)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_decoded_and_invalid_ones_kept() {
        assert_eq!(percent_decoded("a%20b%2Bc+d"), "a b+c+d");
        assert_eq!(percent_decoded("%zz%4"), "%zz%4");
        assert_eq!(percent_decoded("%é%41"), "%éA");
        assert_eq!(percent_decoded("%+1%ff"), "%+1\u{fffd}");
    }

    #[test]
    fn a_password_is_found_wherever_the_client_reads_one() {
        for (url, password) in [
            (
                "postgres://loopx:s3cr3t-pass@db.example:5432/loopx",
                Some("s3cr3t-pass"),
            ),
            ("postgres://u:@h/db", Some("")),
            ("postgres://u@h/db", None),
            ("postgres://h/db", None),
            ("postgres://u%3Ax@h/db", None),
            ("postgres://u:p%40ss%3Aword@h/db", Some("p@ss:word")),
            ("postgres://u:p/a?ss@h/db", Some("p/a?ss")),
            (
                "postgresql://ann@127.0.0.1/p?password=hunter22&sslmode=disable",
                Some("hunter22"),
            ),
            (
                "postgres://u:one@h/db?sslmode=disable&pass%77ord=two",
                Some("two"),
            ),
            ("postgres://u@h/db?PASSWORD=x", Some("x")),
            ("postgres://u@h/db?sslmode=require", None),
            ("u:pw@h/db", Some("pw")),
            ("h/db?password=pw", Some("pw")),
            ("h/db", None),
        ] {
            assert_eq!(url_password(url).as_deref(), password, "{url}");
        }
    }
}
