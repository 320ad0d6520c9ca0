//! "Did you mean" hints: the closest known name by edit distance, when it is close enough to be a
//! plausible typo.

/// The best candidate within a typo's distance of `input`, if any.
pub(crate) fn did_you_mean<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let input_lower = input.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&input_lower, &c.to_lowercase()), c))
        // Allow roughly one edit per three characters: `permision` → `permission`, but not
        // `model` → `role`.
        .filter(|(d, c)| *d <= (c.chars().count().max(input.chars().count()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters, with `_`/`-` treated as equal because TOML users mix them.
fn edit_distance(a: &str, b: &str) -> usize {
    let norm = |c: char| if c == '-' { '_' } else { c };
    let a: Vec<char> = a.chars().map(norm).collect();
    let b: Vec<char> = b.chars().map(norm).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitution.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case("permision", Some("permission"))]
    #[test_case("max-time", Some("max_time"))]
    #[test_case("idle_timout", Some("idle_timeout"))]
    #[test_case("zzz", None)]
    #[test_case("model", None)]
    fn suggests(input: &str, expected: Option<&str>) {
        let keys = ["permission", "max_time", "idle_timeout", "role", "adapter"];
        assert_eq!(did_you_mean(input, keys), expected);
    }
}
