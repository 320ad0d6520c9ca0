//! End-to-end tests: the real `loopx` binary against real projects in temporary directories.

mod support;

mod attacks;
mod board;
mod browser;
mod concurrency;
mod containment;
mod demo;
mod demo_agent;
mod docs;
mod errors;
mod escape;
mod first_hour;
mod freshness;
mod goals;
mod lark;
mod lark_flowback;
mod lifecycle;
mod logging;
mod monitors;
mod multi_host;
mod outcomes;
mod output;
mod permissions;
mod profiles;
mod quota;
mod report;
mod run_loop;
mod run_once;
mod scale;
mod sim;
mod soak;
mod steer;
mod store_files;
mod watch;
mod worktrees;
