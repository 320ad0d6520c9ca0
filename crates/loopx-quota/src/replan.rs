//! Re-planning after a person amended the goal: the open todos were planned for the goal as it
//! was, so the first slice after the amendment plans, with the change in its prompt. Whichever
//! agent decides first takes it; while it runs the others go on with their todos. The kernel
//! ends the re-planning once a planning slice begun after the amendment did its work
//! (`loopx_kernel::store::apply::amend`), so a planning slice a limit or a failure cut short
//! leaves it due.

use crate::SliceKind;
use crate::decide::DecideInput;
use crate::decision::{Decision, Run};

/// The planning slice to run now, if the goal was amended and no planning slice since runs.
pub(crate) fn replan(input: &DecideInput<'_>) -> Option<Decision> {
    let goal = input.goal?;
    goal.replan_after?;
    // One planner at a time, whenever it began (the kernel refuses a second): the others keep
    // working meanwhile. The re-planning stays due until one begun after `after` did its work.
    let planning = input
        .slices
        .iter()
        .any(|s| s.kind == SliceKind::Plan && s.outcome.is_none());
    if planning {
        return None;
    }
    Some(Decision::Deliver {
        run: Run {
            slice: SliceKind::Plan,
            todo: None,
            probe: false,
            max_tokens: None,
        },
        reason: format!(
            "goal {} was amended (revision {}): re-plan its open todos for it first",
            goal.id, goal.revision
        ),
    })
}
