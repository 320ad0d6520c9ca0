//! Where a todo stands on a board: the one classification the local board and the Lark board
//! share, so that the two never disagree about what a card is.

use loopx_kernel::model::{Gate, GateState, SliceRecord, Todo, TodoState};

/// A todo's place on a board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Column {
    /// Open, no question holding it back: an agent may take it.
    Open,
    /// A monitor: loopx polls its check, no agent takes it.
    Waiting,
    /// Claimed by an agent, no slice running on it now.
    Claimed,
    /// A slice is working on it.
    Running,
    /// An open question holds it back.
    Blocked,
    Done,
    Dropped,
}

impl Column {
    /// Every column, in board order.
    pub const ALL: [Column; 7] = [
        Column::Open,
        Column::Claimed,
        Column::Running,
        Column::Waiting,
        Column::Blocked,
        Column::Done,
        Column::Dropped,
    ];

    /// Where `todo` stands, given the open gates and the running slices.
    pub fn of(todo: &Todo, gates: &[Gate], running: &[SliceRecord]) -> Column {
        match todo.state {
            TodoState::Done => Column::Done,
            TodoState::Dropped => Column::Dropped,
            TodoState::Open if todo.is_monitor() => Column::Waiting,
            TodoState::Open if blocking_gate(todo, gates).is_some() => Column::Blocked,
            TodoState::Open => Column::Open,
            TodoState::Claimed if running.iter().any(|s| s.todo == Some(todo.id)) => {
                Column::Running
            }
            TodoState::Claimed => Column::Claimed,
        }
    }

    /// What a person reads: `Waiting (monitor)`, `Blocked by a question`.
    pub fn label(self) -> &'static str {
        match self {
            Column::Open => "Open",
            Column::Waiting => "Waiting (monitor)",
            Column::Claimed => "Claimed",
            Column::Running => "Running",
            Column::Blocked => "Blocked by a question",
            Column::Done => "Done",
            Column::Dropped => "Dropped",
        }
    }
}

/// The open gate that holds `todo` back, if one does: one blocking every agent, one on the
/// todo's goal (`gate ask --goal`), or one naming the todo.
pub fn blocking_gate<'g>(todo: &Todo, gates: &'g [Gate]) -> Option<&'g Gate> {
    gates
        .iter()
        .find(|g| g.state == GateState::Open && g.blocks.holds_todo(todo.id, todo.goal))
}
