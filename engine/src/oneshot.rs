//! A one-value channel whose receiving end is a `Future`, built on std alone (the engine has no
//! async runtime). `Graph::write_async` uses it so async callers wait for a durable commit
//! without parking a thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;

#[derive(Debug)]
struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
    /// The sender is gone; no value will come after the one (if any) in `value`.
    closed: bool,
}

/// The sending half: delivers one value, or closes the channel when dropped unsent.
#[derive(Debug)]
pub(crate) struct Sender<T>(Arc<Mutex<Slot<T>>>);

/// The receiving half: resolves to `Some(value)`, or `None` when the sender was dropped.
#[derive(Debug)]
pub struct Receiver<T>(Arc<Mutex<Slot<T>>>);

pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Arc::new(Mutex::new(Slot {
        value: None,
        waker: None,
        closed: false,
    }));
    (Sender(Arc::clone(&slot)), Receiver(slot))
}

impl<T> Sender<T> {
    pub fn send(self, value: T) {
        self.0.lock().value = Some(value);
        // Drop closes the slot and wakes the receiver.
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut slot = self.0.lock();
            slot.closed = true;
            slot.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut slot = self.0.lock();
        if let Some(v) = slot.value.take() {
            return Poll::Ready(Some(v));
        }
        if slot.closed {
            return Poll::Ready(None);
        }
        match &slot.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => slot.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Wake;

    struct Flag(std::sync::atomic::AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn poll<T>(rx: &mut Receiver<T>, flag: &Arc<Flag>) -> Poll<Option<T>> {
        let waker = Waker::from(Arc::clone(flag));
        Pin::new(rx).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn delivers_once_and_wakes_the_waiting_receiver() {
        let flag = Arc::new(Flag(false.into()));
        let (tx, mut rx) = channel();
        assert!(poll(&mut rx, &flag).is_pending());
        std::thread::spawn(move || tx.send(7))
            .join()
            .expect("sender");
        assert!(flag.0.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(poll(&mut rx, &flag), Poll::Ready(Some(7)));
    }

    #[test]
    fn a_dropped_sender_resolves_to_none() {
        let flag = Arc::new(Flag(false.into()));
        let (tx, mut rx) = channel::<u8>();
        assert!(poll(&mut rx, &flag).is_pending());
        drop(tx);
        assert!(flag.0.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(poll(&mut rx, &flag), Poll::Ready(None));
    }
}
