//! Executed playbook runs (SPEC.md "Playbooks"; the specs are `svc_domains::playbooks`): runs
//! and their outcomes ([`runs`]), executed in the background by [`executor`]: leads from
//! [`lead_source`] ([`leads`]), each worked by [`lead_step`] as the campaign buddy
//! ([`principal`]), pivots steering the plan ([`run_plan`]), outcomes attributed
//! ([`attribution`]) and judged by the statistical judge ([`judge`]) or the connected model
//! ([`model_judge`]).
//!
//! Records: runs are `playbook_run` records keyed `<playbook id>/<run id>` (see [`runs`]), their
//! leads `playbook_run_lead` records (see [`leads`]).

pub mod attribution;
pub mod executor;
pub mod judge;
pub mod lead_source;
pub mod lead_step;
pub mod leads;
pub mod model_judge;
pub mod outcomes;
pub mod principal;
pub mod run_plan;
pub mod runs;
pub mod tasks;
