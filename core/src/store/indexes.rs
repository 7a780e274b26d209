//! The store's side of declarable indexes: the engine's index catalog, and the background
//! builder that backfills (or removes) declared indexes in bounded atomic batches.

use std::sync::atomic::Ordering;

use svc_engine::catalog::{Declared, IndexInfo, IndexSpec, BUILD_BATCH};
use svc_engine::EngineError;

use super::{blocking, Store};
use crate::error::Result;
use crate::store::WorkspaceId;

/// An engine refusal (kind `Input`: a name or target taken, a built-in index) kept apart from
/// the store's own failures, for the caller to word.
pub type Refusable<T> = std::result::Result<T, EngineError>;

impl Store {
    /// Declares an index (POPULATING) and starts the builder.
    pub async fn declare_index(
        &self,
        ws: WorkspaceId,
        spec: IndexSpec,
    ) -> Result<Refusable<Declared>> {
        let graph = self.engine()?;
        let out = blocking(move || Ok(graph.declare_index(ws, spec))).await?;
        self.spawn_index_builder();
        Ok(out)
    }

    /// Drops a declared index (its entries are removed in the background). Ok(false): no such
    /// index and `if_exists`.
    pub async fn drop_index(
        &self,
        ws: WorkspaceId,
        name: String,
        if_exists: bool,
    ) -> Result<Refusable<bool>> {
        let graph = self.engine()?;
        let out = blocking(move || Ok(graph.drop_index(ws, name, if_exists))).await?;
        self.spawn_index_builder();
        Ok(out)
    }

    /// Every index of `ws` with its state.
    pub async fn indexes(&self, ws: WorkspaceId) -> Result<Vec<IndexInfo>> {
        self.read(ws, |snap| Ok(snap.indexes()?)).await
    }

    /// Runs pending index work (a backfill a restart interrupted, a new declaration) to its
    /// end on a thread of its own; at most one such thread runs per store (a call while one
    /// runs only makes sure it looks again before it ends). Each batch reads and advances the
    /// catalog row atomically on the writer. The engine handle is taken anew for each batch,
    /// so `Store::close` is not held up by more than one batch.
    pub fn spawn_index_builder(&self) {
        self.index_work.store(true, Ordering::SeqCst);
        if self.index_builder.swap(true, Ordering::SeqCst) {
            return; // the running builder sees `index_work` before it stops
        }
        let store = self.clone();
        std::thread::spawn(move || loop {
            store.index_work.store(false, Ordering::SeqCst);
            store.run_index_work();
            store.index_builder.store(false, Ordering::SeqCst);
            // Work announced after this builder last looked, and no other builder took it.
            if !store.index_work.load(Ordering::SeqCst)
                || store.index_builder.swap(true, Ordering::SeqCst)
            {
                break;
            }
        });
    }

    /// Index batches until none is left, the store closes, or a step fails.
    fn run_index_work(&self) {
        loop {
            let Ok(graph) = self.engine() else {
                return; // closed: the next start resumes
            };
            match graph.build_indexes_step(BUILD_BATCH) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    // Shutting down, or a storage fault: the next start resumes.
                    tracing::warn!(error = %e, "index builder stopped");
                    return;
                }
            }
        }
    }
}
