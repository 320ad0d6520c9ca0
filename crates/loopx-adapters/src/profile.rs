//! Profiles: one agent's settings (adapter, model, role, permission, limits, quota, environment,
//! prompt). Shipped examples live in `profiles/`; a project keeps its own in `.loopx/profiles/`.

mod load;
mod raw;
mod spec;
mod validate;

pub use load::{
    LoadedProfile, ProfileEntry, find_profile, load_profile_file, load_profile_str,
    load_profiles_dir,
};
pub use spec::{
    ContentHash, DEFAULT_ENV_ALLOW, DEFAULT_PROCESSES, DEFAULT_PROMPT_TEMPLATE, EnvPolicy,
    PROMPT_PLACEHOLDERS, Profile, QuotaSettings, QuotaWindow, ResourceLimits, SliceLimits,
    render_prompt,
};
