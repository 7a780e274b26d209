//! Re-sealing stored records under the current master key (master-key rotation, `svcd admin`):
//! one loop for every record kind that holds a [`Sealed`] value, so the brand context, the
//! webhook signing secrets and the integration configs rotate the same way.

use crate::error::Result;
use crate::plumbing::sealed::{Sealed, Sealer};
use crate::store::{Record, RecordScan, Store, WorkspaceId};

/// A stored record holding one sealed value.
pub trait SealedRecord: Record + Clone + Send + 'static {
    /// The kind the value is sealed under (the associated data besides the workspace).
    fn seal_context(&self) -> String;
    fn sealed_mut(&mut self) -> &mut Sealed;
}

/// Re-seals every record of kind `T` in the workspace under the sealer's current key; returns
/// how many values were rewritten. Each record is re-read and rewritten in its own write, so a
/// concurrent update is never overwritten with an older value.
pub async fn reseal_all<T: SealedRecord>(
    store: &Store,
    sealer: &Sealer,
    ws: WorkspaceId,
) -> Result<usize> {
    let ids: Vec<String> = store
        .scan::<T>(ws, RecordScan::default())
        .await?
        .iter()
        .map(Record::id)
        .collect();
    let mut rewritten = 0;
    for id in ids {
        let sealer = sealer.clone();
        rewritten += store
            .write(move |tx| {
                let Some(mut record) = tx.get::<T>(ws, &id)? else {
                    return Ok(0);
                };
                let context = record.seal_context();
                let Some(bytes) = sealer.reseal(ws, &context, &record.sealed_mut().0)? else {
                    return Ok(0);
                };
                *record.sealed_mut() = Sealed(bytes);
                tx.put(ws, &record)?;
                Ok(1)
            })
            .await?;
    }
    Ok(rewritten)
}
