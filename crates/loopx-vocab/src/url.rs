//! Reading URLs: `%XX` escapes, and the one rule for whether a PostgreSQL URL carries a
//! password (the `loopx.toml` check refuses one; the store's messages hide it; the redactor
//! hides its value in everything an agent prints).

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
