//! The fallback thread: the match followed on a machine of its own, each
//! turn's legal moves answered when the search is late.

use super::*;

/// Follows the match on its own machine and answers each turn's legal
/// moves (see [`Job`]).
pub(super) fn spawn_fallback(
    brain: Box<dyn Brain>,
    role: usize,
    jobs: Receiver<Job>,
    shared: Arc<Shared>,
) -> Result<()> {
    let alive = shared.life.enter();
    let span = tracing::Span::current();
    std::thread::Builder::new().name(thread_name("f", &shared.id)).spawn(move || {
        let _alive = alive;
        // Moved into locals, dropped before `_alive` (the closure's own
        // captures would go after it, and after the allocator's trim).
        let mut brain = brain;
        let jobs = jobs;
        let _enter = span.enter();
        let mut history: Vec<Vec<String>> = Vec::new();
        while !shared.cancelled() {
            match jobs.recv_timeout(POLL * 5) {
                Ok(Job::Turn { moves, reply }) => {
                    let r = (|| -> Result<Vec<String>> {
                        match moves {
                            None if history.is_empty() => {}
                            None => return Err(Illegal(format!("`nil` moves after turn {}", history.len())).into()),
                            Some(joint) => {
                                brain.advance(&joint)?;
                                history.push(joint);
                            }
                        }
                        if brain.terminal()? {
                            return Err(Illegal("asked to play in a terminal state".into()).into());
                        }
                        brain.legal(role)
                    })();
                    let _ = reply.send(r.map_err(Refusal::of));
                }
                Ok(Job::Upgrade(mut b)) => {
                    let replayed = history.iter().try_for_each(|j| b.advance(j));
                    match replayed {
                        Ok(()) => {
                            debug!("fallback moves now on the {}", b.machine());
                            brain = b;
                        }
                        Err(e) => warn!("fallback stays on the {}: {e:#}", brain.machine()),
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    })?;
    Ok(())
}
