//! The lineage as a layered SVG graph of our own layout: a column per kind of node (revisions,
//! todos, slices, evidence, landings), todos in the order they came, each later column beside
//! its neighbours, edges as curves. Dropped todos are dashed and grey, stale evidence and the
//! todos resting on it red with a mark. A column draws at most [`MAX_PER_COLUMN`] nodes, dead
//! ends and stale ones first; the page says how many it left out.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::super::graph::{edge_word, label};
use super::super::{EdgeKind, Lineage, LineageNode, NodeKind};
use super::esc;

const MAX_PER_COLUMN: usize = 80;
const NODE_W: f64 = 210.0;
const NODE_H: f64 = 22.0;
const GAP_X: f64 = 70.0;
const GAP_Y: f64 = 8.0;
/// Characters of a label drawn in a node (the whole label is its tooltip).
const LABEL_CHARS: usize = 30;

const COLUMNS: [(NodeKind, &str); 5] = [
    (NodeKind::Revision, "revisions"),
    (NodeKind::Todo, "todos"),
    (NodeKind::Slice, "slices"),
    (NodeKind::Evidence, "evidence"),
    (NodeKind::Landing, "landings"),
];

/// Where a drawn node is: its column and its top-left corner.
#[derive(Clone, Copy)]
struct At {
    column: usize,
    x: f64,
    y: f64,
}

pub(super) fn lineage(l: &Lineage) -> String {
    let (placed, notes) = place(l);
    let rows = COLUMNS
        .iter()
        .map(|(kind, _)| l.nodes.iter().filter(|n| n.kind == *kind).count())
        .map(|n| n.min(MAX_PER_COLUMN))
        .max()
        .unwrap_or(0);
    let width = 10.0 + COLUMNS.len() as f64 * (NODE_W + GAP_X);
    let height = 40.0 + rows as f64 * (NODE_H + GAP_Y);
    let mut out = format!(
        "<div class=\"scroll\"><svg id=\"lineage-svg\" xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{width:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"lineage\">"
    );
    for (i, (_, name)) in COLUMNS.iter().enumerate() {
        let _ = write!(
            out,
            "<text class=\"lane-name\" x=\"{:.0}\" y=\"14\">{name}</text>",
            10.0 + i as f64 * (NODE_W + GAP_X)
        );
    }
    for edge in &l.edges {
        if let (Some(from), Some(to)) =
            (placed.get(edge.from.as_str()), placed.get(edge.to.as_str()))
        {
            edge_path(*from, *to, edge.kind, &mut out);
        }
    }
    for node in &l.nodes {
        if let Some(at) = placed.get(node.id.as_str()) {
            node_box(node, *at, &mut out);
        }
    }
    out.push_str("</svg></div>\n");
    let mut stale = l.todos.iter().filter(|t| t.rests_on_stale).peekable();
    if stale.peek().is_some() {
        out.push_str("<ul id=\"stale-todos\">");
        for t in stale {
            let _ = write!(
                out,
                "<li>{} rests on stale evidence: {}</li>",
                t.todo,
                esc(t.stale_because.as_deref().unwrap_or(""))
            );
        }
        out.push_str("</ul>\n");
    }
    for note in notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&note));
    }
    out
}

/// Each drawn node's place; what was left out, in words.
fn place(l: &Lineage) -> (BTreeMap<&str, At>, Vec<String>) {
    let mut placed = BTreeMap::new();
    let mut notes = Vec::new();
    for (column, (kind, name)) in COLUMNS.iter().enumerate() {
        let nodes: Vec<&LineageNode> = l.nodes.iter().filter(|n| n.kind == *kind).collect();
        let mut keep: Vec<usize> = (0..nodes.len()).collect();
        if nodes.len() > MAX_PER_COLUMN {
            // Dead ends and stale nodes are what the picture is for; then the newest.
            keep.sort_by_key(|&i| (!(nodes[i].dead_end || nodes[i].stale), nodes.len() - i));
            keep.truncate(MAX_PER_COLUMN);
            keep.sort_unstable();
            notes.push(format!(
                "{} of {} {name} are not drawn (dead ends and stale ones first, then the newest).",
                nodes.len() - MAX_PER_COLUMN,
                nodes.len()
            ));
        }
        if column >= 2 {
            by_neighbours(l, &placed, &nodes, &mut keep);
        }
        for (row, i) in keep.into_iter().enumerate() {
            let at = At {
                column,
                x: 10.0 + column as f64 * (NODE_W + GAP_X),
                y: 24.0 + row as f64 * (NODE_H + GAP_Y),
            };
            placed.insert(nodes[i].id.as_str(), at);
        }
    }
    (placed, notes)
}

/// Orders a column by where its neighbours in the columns to its left stand (the mean of their
/// y), so that a todo's slices sit beside it and a slice's evidence beside the slice: fewer
/// crossing edges. A node without a drawn neighbour keeps the place its order gives it.
fn by_neighbours(
    l: &Lineage,
    placed: &BTreeMap<&str, At>,
    nodes: &[&LineageNode],
    keep: &mut [usize],
) {
    let mut sum: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for e in &l.edges {
        for (this, other) in [(&e.to, &e.from), (&e.from, &e.to)] {
            if let Some(at) = placed.get(other.as_str()) {
                let entry = sum.entry(this.as_str()).or_default();
                entry.0 += at.y;
                entry.1 += 1.0;
            }
        }
    }
    let key = |row: usize, i: usize| match sum.get(nodes[i].id.as_str()) {
        Some((total, n)) => total / n,
        None => 24.0 + row as f64 * (NODE_H + GAP_Y),
    };
    let mut keyed: Vec<(f64, usize)> = keep
        .iter()
        .enumerate()
        .map(|(row, &i)| (key(row, i), i))
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (slot, (_, i)) in keep.iter_mut().zip(keyed) {
        *slot = i;
    }
}

fn node_box(node: &LineageNode, at: At, out: &mut String) {
    let kind = match node.kind {
        NodeKind::Revision => "revision",
        NodeKind::Todo => "todo",
        NodeKind::Slice => "slice",
        NodeKind::Evidence => "evidence",
        NodeKind::Landing => "landing",
    };
    let mut class = format!("node n-{kind}");
    if node.dead_end {
        class.push_str(" dead");
    }
    if node.stale {
        class.push_str(" stale");
    }
    let full = label(node);
    let mark = if node.stale { "⚠ " } else { "" };
    let shown = format!(
        "{mark}{}",
        loopx_kernel::limits::clip(&full, LABEL_CHARS - mark.len().min(2))
    );
    let _ = write!(
        out,
        "<g class=\"{class}\" id=\"n-{}\"><title>{}{}</title>\
         <rect x=\"{:.0}\" y=\"{:.0}\" width=\"{NODE_W}\" height=\"{NODE_H}\" rx=\"3\"/>\
         <text x=\"{:.0}\" y=\"{:.0}\">{}</text></g>",
        esc(&node.id),
        esc(&full),
        if node.state.is_empty() {
            String::new()
        } else {
            format!(" [{}]", esc(&node.state))
        },
        at.x,
        at.y,
        at.x + 5.0,
        at.y + 15.0,
        esc(&shown)
    );
}

fn edge_path(from: At, to: At, kind: EdgeKind, out: &mut String) {
    let (y1, y2) = (from.y + NODE_H / 2.0, to.y + NODE_H / 2.0);
    let d = if from.column == to.column {
        // Within a column (a todo after a todo): a curve out to the right and back.
        let x = from.x + NODE_W;
        format!(
            "M{x:.0},{y1:.0} C{:.0},{y1:.0} {:.0},{y2:.0} {x:.0},{y2:.0}",
            x + 30.0,
            x + 30.0
        )
    } else {
        let (x1, x2) = if from.column < to.column {
            (from.x + NODE_W, to.x)
        } else {
            (from.x, to.x + NODE_W)
        };
        let mid = (x1 + x2) / 2.0;
        format!("M{x1:.0},{y1:.0} C{mid:.0},{y1:.0} {mid:.0},{y2:.0} {x2:.0},{y2:.0}")
    };
    let word = edge_word(kind);
    let _ = write!(
        out,
        "<path class=\"edge e-{word}\" d=\"{d}\"><title>{word}</title></path>"
    );
}

#[cfg(test)]
mod tests {
    use super::super::super::{LineageEdge, LineageNode};
    use super::*;

    fn node(id: &str, kind: NodeKind) -> LineageNode {
        LineageNode {
            id: id.into(),
            kind,
            label: id.into(),
            state: String::new(),
            dead_end: false,
            stale: false,
        }
    }

    fn edge(from: &str, to: &str, kind: EdgeKind) -> LineageEdge {
        LineageEdge {
            from: from.into(),
            to: to.into(),
            kind,
        }
    }

    #[test]
    fn a_slice_is_drawn_beside_its_todo_and_evidence_beside_its_slice() {
        // s1 works t2 and s2 works t1: in the order they came, s1 would face t1.
        let l = Lineage {
            todos: vec![],
            nodes: vec![
                node("r1", NodeKind::Revision),
                node("t1", NodeKind::Todo),
                node("t2", NodeKind::Todo),
                node("s1", NodeKind::Slice),
                node("s2", NodeKind::Slice),
                node("e1", NodeKind::Evidence),
                node("e2", NodeKind::Evidence),
            ],
            edges: vec![
                edge("t2", "s1", EdgeKind::Worked),
                edge("t1", "s2", EdgeKind::Worked),
                edge("s2", "e1", EdgeKind::Recorded),
                edge("s1", "e2", EdgeKind::Recorded),
            ],
        };
        let (placed, notes) = place(&l);
        assert!(notes.is_empty());
        let y = |id: &str| placed[id].y;
        assert_eq!(y("s2"), y("t1"));
        assert_eq!(y("s1"), y("t2"));
        assert_eq!(y("e1"), y("s2"));
        assert_eq!(y("e2"), y("s1"));
    }
}
