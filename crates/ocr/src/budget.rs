//! How many scanned pages are worked on at once, across every call on the readers sharing a
//! budget.
//!
//! Each page being rendered and recognized holds a turn, from before it is rendered until its
//! OCR thread has finished (even past its deadline); a budget has a fixed number of turns
//! (by default a reader's [`ReadOptions::threads`](crate::ReadOptions::threads)). The budget
//! is shared by every concurrent call, so a worker can read several files at once (a one-page
//! scan then no longer leaves the second core idle) while the number of page images and
//! busy Tesseract engines stays fixed, whatever the number of calls: that is what bounds the
//! worker's memory and CPU. Readers for different languages can share one budget
//! ([`PageReader::with_budget`](crate::PageReader::with_budget)).
//!
//! Turns go to the oldest call first (by the order calls began), so the file that arrived first
//! finishes first and later files only fill cores it leaves idle: the latency of one file at a
//! time, the throughput of all of them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A fixed number of turns for scanned pages, handed out oldest call first.
#[derive(Debug)]
pub struct PageBudget {
    state: Mutex<State>,
    changed: Condvar,
    next_call: AtomicU64,
}

#[derive(Debug)]
struct State {
    free: usize,
    /// The call number of every page waiting for a turn (one entry per waiting page).
    waiting: BinaryHeap<Reverse<u64>>,
}

/// One page's turn, given back when dropped (it can move to the thread doing the work).
#[derive(Debug)]
pub(crate) struct Turn {
    budget: Arc<PageBudget>,
}

impl PageBudget {
    /// A budget of `turns` (at least one): pages rendered and recognized at once.
    pub fn new(turns: usize) -> PageBudget {
        PageBudget {
            state: Mutex::new(State {
                free: turns.max(1),
                waiting: BinaryHeap::new(),
            }),
            changed: Condvar::new(),
            next_call: AtomicU64::new(0),
        }
    }

    /// The number that orders a new call's pages after those of every call begun before it.
    pub(crate) fn call_number(&self) -> u64 {
        self.next_call.fetch_add(1, Ordering::Relaxed)
    }

    /// Waits for a turn for a page of call `call`: one is free and no page of an older call is
    /// waiting.
    pub(crate) fn turn(self: &Arc<Self>, call: u64) -> Turn {
        let mut state = self.lock();
        state.waiting.push(Reverse(call));
        loop {
            if state.free > 0 && state.waiting.peek() == Some(&Reverse(call)) {
                state.waiting.pop();
                state.free -= 1;
                if state.free > 0 {
                    // The next-oldest waiter may take the turn left over.
                    self.changed.notify_all();
                }
                return Turn {
                    budget: Arc::clone(self),
                };
            }
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A counter and a queue updated together under the lock: still consistent after a
        // panic elsewhere.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.budget.lock().free += 1;
        self.budget.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    #[test]
    fn never_more_turns_than_the_budget() {
        let budget = Arc::new(PageBudget::new(2));
        let (busy, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (budget, busy, peak) = (budget.clone(), busy.clone(), peak.clone());
                thread::spawn(move || {
                    let call = budget.call_number();
                    for _ in 0..5 {
                        let _turn = budget.turn(call);
                        let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        thread::sleep(Duration::from_millis(2));
                        busy.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2);
        assert_eq!(budget.lock().free, 2, "every turn came back");
    }

    #[test]
    fn the_oldest_call_goes_first() {
        let budget = Arc::new(PageBudget::new(1));
        let held = budget.turn(budget.call_number());
        let (older, newer) = (budget.call_number(), budget.call_number());
        let (tx, rx) = mpsc::channel();
        // The newer call starts waiting first; the older one must still be served first.
        let spawn_waiter = |call: u64| {
            let (budget, tx) = (budget.clone(), tx.clone());
            thread::spawn(move || {
                let _turn = budget.turn(call);
                tx.send(call).unwrap();
            })
        };
        let b = spawn_waiter(newer);
        thread::sleep(Duration::from_millis(50));
        let a = spawn_waiter(older);
        thread::sleep(Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "nobody runs while the turn is held");
        drop(held);
        assert_eq!(rx.recv().unwrap(), older);
        assert_eq!(rx.recv().unwrap(), newer);
        a.join().unwrap();
        b.join().unwrap();
    }
}
