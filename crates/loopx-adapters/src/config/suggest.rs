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
        // Allow roughly one edit per three characters: `permision` → `permission`, `modle` →
        // `model`, but not `model` → `role`.
        .filter(|(d, c)| *d <= (c.chars().count().max(input.chars().count()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Edit distance counting a swap of two neighbours as one edit (optimal string alignment),
/// with `_`/`-` treated as equal because TOML users mix them.
fn edit_distance(a: &str, b: &str) -> usize {
    let norm = |c: char| if c == '-' { '_' } else { c };
    let a: Vec<char> = a.chars().map(norm).collect();
    let b: Vec<char> = b.chars().map(norm).collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case("permision", Some("permission"))]
    #[test_case("max-time", Some("max_time"))]
    #[test_case("idle_timout", Some("idle_timeout"))]
    #[test_case("modle", Some("model"))]
    #[test_case("zzz", None)]
    #[test_case("mdl", None)]
    fn suggests(input: &str, expected: Option<&str>) {
        let keys = [
            "permission",
            "max_time",
            "idle_timeout",
            "role",
            "adapter",
            "model",
        ];
        assert_eq!(did_you_mean(input, keys), expected);
    }
}
