//! Plumbing every domain uses and none owns: ids and their wire forms (`ids`), time and its
//! renderings (`clock`), sealing secrets at rest (`sealed`) and the service's own secrets on
//! disk (`secrets`), list parameters (`paging`), and re-sealing stored records after a master-key rotation (`reseal`).

pub mod clock;
pub mod data_dir;
pub mod ids;
pub mod paging;
pub mod reseal;
pub mod sealed;
pub mod secrets;
