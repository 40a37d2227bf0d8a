//! Work done ahead of an ordered loop, on every CPU: the update reads, hashes and chunks files on
//! worker threads while one thread records them in walk order (the manifest, the lexical index
//! and the embedding queue need that order). On a cold 1M-line tree reading and parsing is most
//! of the time to the first answer, and it parallelises perfectly.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Results a worker may run ahead of the recording loop, per worker: bounds what waits in
/// memory (a result holds a whole file's text) when recording is the slower side.
const AHEAD_PER_WORKER: usize = 64;

/// Calls `consume(i, work(&items[i]))` for every item in order, `work` running on `workers`
/// threads ahead of it. Stops at the first error `consume` returns (workers finish the item
/// they hold and take no other). With one worker or a handful of items, runs inline.
pub(super) fn for_each_in_order<T, R, E>(
    items: &[T],
    workers: usize,
    work: impl Fn(&T) -> R + Sync,
    mut consume: impl FnMut(usize, R) -> Result<(), E>,
) -> Result<(), E>
where
    T: Sync,
    R: Send,
{
    if workers <= 1 || items.len() < 2 * workers {
        for (i, item) in items.iter().enumerate() {
            consume(i, work(item))?;
        }
        return Ok(());
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::sync_channel::<(usize, R)>(AHEAD_PER_WORKER * workers);
        for _ in 0..workers {
            let (sender, next, stop, work) = (sender.clone(), &next, &stop, &work);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    if sender.send((i, work(item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        // Results arrive roughly in order (workers claim items in order); the few that
        // overtake wait here for the one before them.
        let mut early: HashMap<usize, R> = HashMap::new();
        let mut expected = 0;
        let outcome = loop {
            if expected == items.len() {
                break Ok(());
            }
            let result = match early.remove(&expected) {
                Some(result) => result,
                None => match receiver.recv() {
                    Ok((i, result)) if i == expected => result,
                    Ok((i, result)) => {
                        early.insert(i, result);
                        continue;
                    }
                    // Every worker gone before the last item: one panicked, which the scope
                    // re-raises when it ends.
                    Err(_) => break Ok(()),
                },
            };
            if let Err(err) = consume(expected, result) {
                break Err(err);
            }
            expected += 1;
        };
        stop.store(true, Ordering::Relaxed);
        // Unblocks workers waiting on a full channel.
        drop(receiver);
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_consumed_in_order_whatever_finishes_first() {
        let items: Vec<u64> = (0..500).collect();
        let mut seen = Vec::new();
        let result: Result<(), ()> = for_each_in_order(
            &items,
            3,
            |&n| {
                // Uneven work, so later items often finish first.
                if n % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(300));
                }
                n * 2
            },
            |i, doubled| {
                assert_eq!(doubled, items[i] * 2);
                seen.push(i);
                Ok(())
            },
        );
        assert!(result.is_ok());
        assert_eq!(seen, (0..500).collect::<Vec<_>>());
    }

    #[test]
    fn an_error_stops_the_loop_and_the_workers() {
        let items: Vec<usize> = (0..10_000).collect();
        let worked = AtomicUsize::new(0);
        let mut consumed = 0;
        let result = for_each_in_order(
            &items,
            2,
            |&n| {
                worked.fetch_add(1, Ordering::Relaxed);
                n
            },
            |i, _| {
                consumed += 1;
                if i == 100 { Err("stop") } else { Ok(()) }
            },
        );
        assert_eq!(result, Err("stop"));
        assert_eq!(consumed, 101);
        // Workers ran at most a channel's worth ahead, not through all 10,000 items.
        assert!(worked.load(Ordering::Relaxed) < 100 + 2 * AHEAD_PER_WORKER + 10, "{}", worked.load(Ordering::Relaxed));
    }

    #[test]
    fn one_worker_or_few_items_run_inline() {
        let mut seen = Vec::new();
        let result: Result<(), ()> = for_each_in_order(
            &[1, 2, 3],
            1,
            |&n| n,
            |_, n| {
                seen.push(n);
                Ok(())
            },
        );
        assert!(result.is_ok());
        assert_eq!(seen, vec![1, 2, 3]);
        let empty: [u8; 0] = [];
        let none: Result<(), ()> = for_each_in_order(&empty, 4, |&n| n, |_, _| panic!("no item"));
        assert!(none.is_ok());
    }
}
