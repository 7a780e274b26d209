//! Compiled batch trees kept between runs of a cached plan, per thread.
//!
//! Compiling a plan's batch tree (operators, expression kernels) and dropping it again costs
//! about a fifth of a short query. A cached plan's tree is therefore kept after a run, reset
//! (`batch::Tree::reset`: everything a run learns goes), and handed to the next run of the
//! same plan on the same thread. Per thread, so concurrent runs of one plan never share a
//! tree (a tree is not `Send`: its dictionaries are reference-counted); at most
//! [`PER_THREAD`] trees per thread, the least recently used going first.
//!
//! A kept tree borrows its plan: each entry owns an `Arc` of the plan beside the tree
//! (`self_cell`), so the plan outlives the tree even after the cache evicted it.

use std::cell::RefCell;
use std::sync::Arc;

use crate::batch::{compile_tree, Tree};
use crate::plan::Stage;

use super::Prepared;

/// Trees kept per thread.
const PER_THREAD: usize = 16;

type TreeBox<'a> = Box<Tree<'a>>;

self_cell::self_cell!(
    /// A plan and its compiled tree.
    struct Kept {
        owner: Arc<Prepared>,
        #[not_covariant]
        dependent: TreeBox,
    }
);

thread_local! {
    /// Least recently used first.
    static KEPT: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` over `p` with `p`'s batch tree: this thread's kept one, else compiled now (None
/// when the plan's root has no batch form); keeps the tree afterwards when `f` succeeded.
pub(super) fn with_tree<T, E>(
    p: &Arc<Prepared>,
    f: impl for<'x, 'y> FnOnce(&'x Prepared, Option<&'y mut Tree<'x>>) -> Result<T, E>,
) -> Result<T, E> {
    let [Stage::Read(root)] = p.planned.stages.as_slice() else {
        return f(p, None);
    };
    let kept = KEPT.with(|k| {
        let mut k = k.borrow_mut();
        let i = k.iter().position(|e| Arc::ptr_eq(e.borrow_owner(), p))?;
        Some(k.remove(i))
    });
    let mut kept = match kept {
        Some(kept) => kept,
        None if p.memo.declined(root.id) => return f(p, None),
        None => {
            let compiled = Kept::try_new(Arc::clone(p), |p| {
                let [Stage::Read(root)] = p.planned.stages.as_slice() else {
                    return Err(());
                };
                compile_tree(root, p.planned.width, &p.analysis).ok_or(())
            });
            match compiled {
                Ok(kept) => kept,
                Err(()) => {
                    p.memo.decline(root.id);
                    return f(p, None);
                }
            }
        }
    };
    let (out, again) = kept.with_dependent_mut(|p, tree| {
        let out = f(p, Some(tree));
        let again = out.is_ok() && tree.reset();
        (out, again)
    });
    if again {
        KEPT.with(|k| {
            let mut k = k.borrow_mut();
            if k.len() >= PER_THREAD {
                k.remove(0);
            }
            k.push(kept);
        });
    }
    out
}
