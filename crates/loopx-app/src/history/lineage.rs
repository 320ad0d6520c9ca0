//! The lineage of a goal: revisions → todos (made by a person, proposed by a slice, `--after`,
//! `--next`, a monitor's then-todos, re-planned or dropped) → slices → evidence → landings. A
//! dropped todo stays, as a dead end; a todo done on evidence gone stale, and every todo that
//! came after it, is marked as resting on stale evidence.

use std::collections::{BTreeMap, BTreeSet};

use loopx_kernel::model::{EventKind, EvidenceKind, SliceRecord, Todo, TodoState};
use loopx_kernel::{Timestamp, TodoId};
use serde::Serialize;

use super::Records;

/// The graph, and a line per todo with its parent.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Lineage {
    pub todos: Vec<TodoLine>,
    pub nodes: Vec<LineageNode>,
    pub edges: Vec<LineageEdge>,
}

/// One todo in the lineage.
#[derive(Debug, Clone, Serialize)]
pub struct TodoLine {
    pub todo: TodoId,
    pub title: String,
    pub state: TodoState,
    /// The node it came from: a revision (`r1`, made by a person or loopx), a slice (`s4`,
    /// proposed by it), or a todo (`t2`, its `--next` successor).
    pub parent: String,
    /// How: `made`, `proposed` or `next`.
    pub made: EdgeKind,
    pub created_by: String,
    /// Dropped: drawn as a dead end.
    pub dead_end: bool,
    /// Done on evidence that has since gone stale, or after such a todo (`--after`, `--next`).
    pub rests_on_stale: bool,
    /// Why: `e4 is stale (src/lib.rs changed since it was recorded)`, or `after t2`.
    pub stale_because: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Revision,
    Todo,
    Slice,
    Evidence,
    Landing,
}

#[derive(Debug, Clone, Serialize)]
pub struct LineageNode {
    /// `r2`, `t3`, `s5`, `e7`.
    pub id: String,
    pub kind: NodeKind,
    pub label: String,
    /// A todo's state, a slice's outcome, a piece of evidence's kind.
    pub state: String,
    pub dead_end: bool,
    /// Stale evidence, or a todo resting on stale evidence.
    pub stale: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// A revision → a todo a person (or loopx) added under it.
    Made,
    /// A slice → a todo it proposed.
    Proposed,
    /// A todo → a todo that waits on it (`--after`).
    After,
    /// A todo → its successor (`todo done --next`).
    Next,
    /// A monitor → a todo that waits on it.
    Then,
    /// A re-planning slice → a todo it rewrote.
    Replanned,
    /// A re-planning slice → a todo it dropped.
    Dropped,
    /// A revision → a planning slice under it.
    Planned,
    /// A todo → a slice on it.
    Worked,
    /// A slice (or a todo) → evidence.
    Recorded,
    /// A slice (or a todo) → a landing.
    Landed,
}

#[derive(Debug, Clone, Serialize)]
pub struct LineageEdge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

/// The lineage of `r.goal`; `done`: when each todo was done.
pub(super) fn lineage(r: &Records, done: &BTreeMap<TodoId, Timestamp>) -> Lineage {
    let mut g = Graph::default();
    for v in &r.revisions {
        g.node(
            format!("r{}", v.number),
            NodeKind::Revision,
            v.summary(),
            String::new(),
        );
    }
    if r.revisions.is_empty() {
        g.node(
            "r1".into(),
            NodeKind::Revision,
            "started".into(),
            String::new(),
        );
    }
    let (mut lines, todo_nodes) = todos(r, done, &mut g);
    slices_and_evidence(r, &mut g);
    replanned(r, &mut g);
    mark_stale(r, &mut lines);
    for (line, &at) in lines.iter().zip(&todo_nodes) {
        g.nodes[at].dead_end = line.dead_end;
        g.nodes[at].stale = line.rests_on_stale;
    }
    Lineage {
        todos: lines,
        nodes: g.nodes,
        edges: g.edges,
    }
}

/// A node per todo, each with the edge from its parent and from what it waits on; the lines of
/// the todos, and where their nodes are.
fn todos(
    r: &Records,
    done: &BTreeMap<TodoId, Timestamp>,
    g: &mut Graph,
) -> (Vec<TodoLine>, Vec<usize>) {
    let by_agent = slices_by_agent(&r.slices);
    let todo_ids: BTreeSet<TodoId> = r.todos.iter().map(|t| t.id).collect();
    let monitors: BTreeSet<TodoId> = r
        .todos
        .iter()
        .filter(|t| t.is_monitor())
        .map(|t| t.id)
        .collect();
    let mut lines = Vec::new();
    let mut todo_nodes = Vec::new();
    for todo in &r.todos {
        let (parent, made) = parent_of(r, todo, done, &by_agent);
        todo_nodes.push(g.nodes.len());
        g.node(
            todo.id.to_string(),
            NodeKind::Todo,
            todo.title.clone(),
            todo.state.as_str().into(),
        );
        g.edge(&parent, &todo.id.to_string(), made);
        for dep in todo.after.iter().filter(|d| todo_ids.contains(d)) {
            if made == EdgeKind::Next && parent == dep.to_string() {
                continue;
            }
            let kind = if monitors.contains(dep) {
                EdgeKind::Then
            } else {
                EdgeKind::After
            };
            g.edge(&dep.to_string(), &todo.id.to_string(), kind);
        }
        lines.push(TodoLine {
            todo: todo.id,
            title: todo.title.clone(),
            state: todo.state,
            parent,
            made,
            created_by: todo.created_by.clone(),
            dead_end: todo.state == TodoState::Dropped,
            rests_on_stale: false,
            stale_because: None,
        });
    }
    (lines, todo_nodes)
}

/// The re-planning slices' edges to the todos they rewrote or dropped.
fn replanned(r: &Records, g: &mut Graph) {
    for e in &r.events {
        if let EventKind::TodoReplanned {
            todo,
            slice,
            dropped,
            ..
        } = &e.kind
        {
            let kind = if *dropped {
                EdgeKind::Dropped
            } else {
                EdgeKind::Replanned
            };
            g.edge(&slice.to_string(), &todo.to_string(), kind);
        }
    }
}

/// The slices (under their todo or, for planning, their revision), and the evidence under them.
fn slices_and_evidence(r: &Records, g: &mut Graph) {
    let ours: BTreeSet<loopx_kernel::SliceId> = r.slices.iter().map(|s| s.id).collect();
    for slice in &r.slices {
        let state = slice.outcome.map_or("running", |o| o.as_str());
        let label = format!("{} {} by {}", slice.kind.as_str(), slice.id, slice.agent);
        g.node(
            slice.id.to_string(),
            NodeKind::Slice,
            label,
            state.to_owned(),
        );
        let from = match slice.todo {
            Some(todo) => (todo.to_string(), EdgeKind::Worked),
            None => (revision_at(r, slice.started_at), EdgeKind::Planned),
        };
        g.edge(&from.0, &slice.id.to_string(), from.1);
    }
    for e in &r.evidence {
        let (kind, edge) = match e.kind {
            EvidenceKind::Land => (NodeKind::Landing, EdgeKind::Landed),
            _ => (NodeKind::Evidence, EdgeKind::Recorded),
        };
        g.node(
            e.id.to_string(),
            kind,
            e.summary.clone(),
            e.kind.as_str().to_owned(),
        );
        if r.stale.contains_key(&e.id)
            && let Some(node) = g.nodes.last_mut()
        {
            node.stale = true;
        }
        let from = match (e.slice, e.todo) {
            (Some(slice), _) if ours.contains(&slice) => slice.to_string(),
            (_, Some(todo)) => todo.to_string(),
            _ => revision_at(r, e.at),
        };
        g.edge(&from, &e.id.to_string(), edge);
    }
}

/// Where a todo came from: its predecessor when it is a `--next` successor (made in the same
/// transaction that finished it), the slice that proposed it, else the revision it was added
/// under.
fn parent_of(
    r: &Records,
    todo: &Todo,
    done: &BTreeMap<TodoId, Timestamp>,
    by_agent: &BTreeMap<String, Vec<&SliceRecord>>,
) -> (String, EdgeKind) {
    if let Some(prev) = todo
        .after
        .iter()
        .find(|d| done.get(d) == Some(&todo.created_at))
    {
        return (prev.to_string(), EdgeKind::Next);
    }
    if let Some(agent) = todo.created_by.strip_prefix("agent:")
        && let Some(slice) = running_at(by_agent.get(agent), todo.created_at)
    {
        return (slice.id.to_string(), EdgeKind::Proposed);
    }
    (revision_at(r, todo.created_at), EdgeKind::Made)
}

/// The revision in force at `at`: the newest recorded at or before it (`r1` when none was).
fn revision_at(r: &Records, at: Timestamp) -> String {
    let number = r
        .revisions
        .iter()
        .rev()
        .find(|v| v.at <= at)
        .or(r.revisions.first())
        .map_or(1, |v| v.number);
    format!("r{number}")
}

fn slices_by_agent(slices: &[SliceRecord]) -> BTreeMap<String, Vec<&SliceRecord>> {
    let mut out: BTreeMap<String, Vec<&SliceRecord>> = BTreeMap::new();
    for slice in slices {
        out.entry(slice.agent.to_string()).or_default().push(slice);
    }
    out
}

/// The agent's slice that was running at `at` (the newest begun at or before it).
fn running_at<'a>(slices: Option<&Vec<&'a SliceRecord>>, at: Timestamp) -> Option<&'a SliceRecord> {
    let slices = slices?;
    let begun = slices.partition_point(|s| s.started_at <= at);
    let slice = *slices.get(begun.checked_sub(1)?)?;
    slice.ended_at.is_none_or(|end| end >= at).then_some(slice)
}

/// Marks the todos that rest on stale evidence (`super::stale`: the one definition `status`
/// uses too), with why.
fn mark_stale(r: &Records, lines: &mut [TodoLine]) {
    let resting = super::stale::resting_on_stale(&r.todos, &r.evidence, &r.stale);
    for line in lines {
        if let Some(why) = resting.get(&line.todo) {
            line.rests_on_stale = true;
            line.stale_because = Some(why.clone());
        }
    }
}

#[derive(Default)]
struct Graph {
    nodes: Vec<LineageNode>,
    edges: Vec<LineageEdge>,
}

impl Graph {
    fn node(&mut self, id: String, kind: NodeKind, label: String, state: String) {
        self.nodes.push(LineageNode {
            id,
            kind,
            label,
            state,
            dead_end: false,
            stale: false,
        });
    }

    fn edge(&mut self, from: &str, to: &str, kind: EdgeKind) {
        self.edges.push(LineageEdge {
            from: from.to_owned(),
            to: to.to_owned(),
            kind,
        });
    }
}
