//! The on-disk format version and step-wise migrations.
//!
//! A new store is stamped with `FORMAT_VERSION`. Opening an older store runs each step from its
//! version up, stamping the version after every step, so an interrupted upgrade resumes where it
//! stopped. A store newer than this build is refused rather than misread.

use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::store::{KvRead, Store};

/// The format this build writes.
pub const FORMAT_VERSION: u32 = 1;

/// One upgrade step: `steps[i]` turns format `i + 1` into format `i + 2`.
pub(crate) type Migration = fn(&Store) -> Result<(), EngineError>;

/// The steps of this build (none yet: format 1 is the first).
const MIGRATIONS: &[Migration] = &[];

pub(crate) fn stored_version(store: &Store) -> Result<Option<u32>, EngineError> {
    let Some(b) = store.get(Cf::Meta, keys::meta::FORMAT_VERSION)? else {
        return Ok(None);
    };
    let arr: [u8; 4] = b.as_slice().try_into().map_err(|_| EngineError::Corrupt {
        context: "format version",
        detail: format!("{b:?}"),
    })?;
    Ok(Some(u32::from_be_bytes(arr)))
}

fn stamp(store: &Store, version: u32) -> Result<(), EngineError> {
    let mut batch = store.batch();
    batch.put(Cf::Meta, keys::meta::FORMAT_VERSION, &version.to_be_bytes())?;
    store.write(batch)?;
    store.sync_wal()
}

fn is_empty(store: &Store) -> Result<bool, EngineError> {
    let mut empty = true;
    for cf in Cf::ALL {
        store.scan(cf, &[], None, false, &mut |_, _| {
            empty = false;
            false
        })?;
    }
    Ok(empty)
}

/// Brings the store to this build's format; returns the version found before.
pub(crate) fn run(store: &Store) -> Result<Option<u32>, EngineError> {
    upgrade(store, FORMAT_VERSION, MIGRATIONS)
}

pub(crate) fn upgrade(
    store: &Store,
    target: u32,
    steps: &[Migration],
) -> Result<Option<u32>, EngineError> {
    let found = stored_version(store)?;
    let mut version = match found {
        Some(v) => v,
        None if is_empty(store)? => {
            stamp(store, target)?;
            return Ok(None);
        }
        None => {
            return Err(EngineError::Corrupt {
                context: "format version",
                detail: "missing in a non-empty store".into(),
            })
        }
    };
    if version > target {
        return Err(EngineError::FormatTooNew {
            found: version,
            supported: target,
        });
    }
    while version < target {
        let step = steps
            .get(version as usize - 1)
            .ok_or_else(|| EngineError::Corrupt {
                context: "format version",
                detail: format!("no migration from format {version}"),
            })?;
        step(store)?;
        version += 1;
        stamp(store, version)?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreOptions;

    fn mark_two(store: &Store) -> Result<(), EngineError> {
        let mut b = store.batch();
        b.put(Cf::Meta, b"step2", b"done")?;
        store.write(b)
    }

    fn mark_three(store: &Store) -> Result<(), EngineError> {
        // A step sees the previous step's result.
        assert_eq!(
            store.get(Cf::Meta, b"step2")?.as_deref(),
            Some(&b"done"[..])
        );
        let mut b = store.batch();
        b.put(Cf::Meta, b"step3", b"done")?;
        store.write(b)
    }

    #[test]
    fn new_stores_are_stamped_and_old_ones_upgraded_step_by_step() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        assert_eq!(upgrade(&store, 1, &[]).expect("stamp"), None);
        assert_eq!(stored_version(&store).expect("read"), Some(1));
        let steps: &[Migration] = &[mark_two, mark_three];
        assert_eq!(upgrade(&store, 3, steps).expect("upgrade"), Some(1));
        assert_eq!(stored_version(&store).expect("read"), Some(3));
        assert_eq!(
            store.get(Cf::Meta, b"step3").expect("read").as_deref(),
            Some(&b"done"[..])
        );
        // Running again is a no-op.
        assert_eq!(upgrade(&store, 3, steps).expect("again"), Some(3));
    }

    #[test]
    fn newer_formats_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        stamp(&store, 9).expect("stamp");
        assert!(matches!(
            upgrade(&store, 1, &[]),
            Err(EngineError::FormatTooNew {
                found: 9,
                supported: 1
            })
        ));
    }
}
