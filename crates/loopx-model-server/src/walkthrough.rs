//! The shell commands of one section of a walk-through page (`docs/try-offline.md`), so that a
//! test runs them exactly as printed. A page's `sh` blocks (fenced with backticks, or with
//! tildes when a block holds backticks itself) are its commands; `cargo install` lines are
//! left out, since the test already built what they install.

/// The commands of the `## heading` section of `markdown`, its `sh` blocks joined in order.
/// Panics when the section or its commands are missing: a test would otherwise run nothing.
pub fn section_commands(markdown: &str, heading: &str) -> String {
    let start = markdown
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("no section `## {heading}`"));
    let body = &markdown[start + heading.len() + 4..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    let mut commands = String::new();
    let mut fence = None;
    for line in body.lines() {
        match fence {
            None if line == "```sh" || line == "~~~sh" => fence = Some(&line[..3]),
            Some(end) if line == end => fence = None,
            Some(_) if !line.starts_with("cargo install ") => {
                commands.push_str(line);
                commands.push('\n');
            }
            _ => {}
        }
    }
    assert!(
        !commands.is_empty(),
        "section `## {heading}` has no sh block"
    );
    commands
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_section_s_sh_blocks_only() {
        let page = "# P\n\n## A\n\n```sh\necho a\n```\n\n```toml\nx = 1\n```\n\n~~~sh\ncargo install --path x\necho '```'\n~~~\n\n## B\n\n```sh\necho b\n```\n";
        assert_eq!(section_commands(page, "A"), "echo a\necho '```'\n");
        assert_eq!(section_commands(page, "B"), "echo b\n");
    }
}
