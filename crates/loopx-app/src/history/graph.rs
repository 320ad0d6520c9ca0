//! The lineage as a graph language: a Mermaid flowchart or Graphviz dot (`--graph`). Dropped
//! todos are dashed dead ends; stale evidence, and todos that rest on it, are red.

use std::fmt::Write;

use super::{EdgeKind, Lineage, LineageNode, NodeKind};

/// Which graph language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

impl std::str::FromStr for GraphFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "mermaid" => Ok(GraphFormat::Mermaid),
            "dot" => Ok(GraphFormat::Dot),
            other => Err(format!(
                "unknown graph format `{other}`: use `mermaid` or `dot`"
            )),
        }
    }
}

/// Labels are clipped so that a long title keeps the graph readable.
const LABEL_CHARS: usize = 48;

/// The lineage in `format`, ending with a newline.
pub fn render_graph(lineage: &Lineage, format: GraphFormat) -> String {
    match format {
        GraphFormat::Mermaid => mermaid(lineage),
        GraphFormat::Dot => dot(lineage),
    }
}

pub(super) fn label(node: &LineageNode) -> String {
    let text = loopx_kernel::limits::clip(node.label.trim(), LABEL_CHARS);
    let mut label = format!("{}: {text}", node.id);
    if node.dead_end {
        label.push_str(" (dropped)");
    }
    if node.stale {
        label.push_str(match node.kind {
            NodeKind::Todo => " (rests on stale evidence)",
            _ => " (stale)",
        });
    }
    label
}

pub(super) fn edge_word(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Made => "made",
        EdgeKind::Proposed => "proposed",
        EdgeKind::After => "after",
        EdgeKind::Next => "next",
        EdgeKind::Then => "then",
        EdgeKind::Replanned => "replanned",
        EdgeKind::Dropped => "dropped",
        EdgeKind::Planned => "planned",
        EdgeKind::Worked => "worked",
        EdgeKind::Recorded => "recorded",
        EdgeKind::Landed => "landed",
    }
}

fn mermaid(lineage: &Lineage) -> String {
    let mut out = String::from("flowchart LR\n");
    for node in &lineage.nodes {
        // Mermaid's own escapes: `#quot;` for a quote; no markup from a title.
        let text: String = label(node)
            .chars()
            .map(|c| match c {
                '"' => "#quot;".to_owned(),
                '<' => "#lt;".to_owned(),
                '>' => "#gt;".to_owned(),
                '\n' | '\r' => " ".to_owned(),
                c => c.to_string(),
            })
            .collect();
        let (open, close) = match node.kind {
            NodeKind::Revision => ("[/", "/]"),
            NodeKind::Todo => ("[", "]"),
            NodeKind::Slice => ("(", ")"),
            NodeKind::Evidence => ("[[", "]]"),
            NodeKind::Landing => ("{{", "}}"),
        };
        let _ = write!(out, "  {}{open}\"{text}\"{close}", node.id);
        match (node.dead_end, node.stale) {
            (true, _) => out.push_str(":::dead"),
            (_, true) => out.push_str(":::stale"),
            _ => {}
        }
        out.push('\n');
    }
    for edge in &lineage.edges {
        let arrow = match edge.kind {
            EdgeKind::Dropped | EdgeKind::Replanned => "-.->",
            _ => "-->",
        };
        let _ = writeln!(
            out,
            "  {} {arrow}|{}| {}",
            edge.from,
            edge_word(edge.kind),
            edge.to
        );
    }
    out.push_str("  classDef dead stroke-dasharray: 5 5,color:#888\n");
    out.push_str("  classDef stale fill:#fdd,stroke:#c00\n");
    out
}

/// A dot string: quoted, with `\` and `"` escaped and no line breaks.
fn dot_quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn dot(lineage: &Lineage) -> String {
    let mut out = String::from("digraph lineage {\n  rankdir=LR;\n  node [fontsize=10];\n");
    for node in &lineage.nodes {
        let shape = match node.kind {
            NodeKind::Revision => "parallelogram",
            NodeKind::Todo => "box",
            NodeKind::Slice => "ellipse",
            NodeKind::Evidence => "note",
            NodeKind::Landing => "hexagon",
        };
        let mut attrs = format!("label={}, shape={shape}", dot_quoted(&label(node)));
        if node.dead_end {
            attrs.push_str(", style=dashed, fontcolor=gray40");
        } else if node.stale {
            attrs.push_str(", color=red, fontcolor=red");
        }
        let _ = writeln!(out, "  {} [{attrs}];", dot_quoted(&node.id));
    }
    for edge in &lineage.edges {
        let style = match edge.kind {
            EdgeKind::Dropped | EdgeKind::Replanned => ", style=dashed",
            _ => "",
        };
        let _ = writeln!(
            out,
            "  {} -> {} [label={}{style}];",
            dot_quoted(&edge.from),
            dot_quoted(&edge.to),
            dot_quoted(edge_word(edge.kind))
        );
    }
    out.push_str("}\n");
    out
}
