//! Why a slice could not be run at all, and what that means, are `loopx_domain::run_error`'s.

pub use loopx_domain::run_error::{SupervisorError, chain};
