//! The writer thread: takes everything queued since its last turn and writes it with
//! one call, so many concurrent callers become one pipelined write.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Shared;

pub(super) fn run(shared: Arc<Shared>) {
    loop {
        let batch = {
            let mut out = shared.out.lock();
            while (out.buf.is_empty() || out.busy) && !out.closed {
                out.writer_waiting = true;
                shared.writer_wake.wait(&mut out);
                out.writer_waiting = false;
            }
            if out.closed {
                return;
            }
            // The in-flight counter, not the waiters' queue: no second lock per write.
            if super::waiting::policy::writer_lingers(
                shared.caller_inflight.load(Ordering::Relaxed),
            ) {
                // Many callers in flight: the ones just woken by their replies are about
                // to queue their next command; one yield lets them join this write.
                drop(out);
                super::waiting::timed_yield(&*shared);
                out = shared.out.lock();
                if out.closed {
                    return;
                }
                if out.buf.is_empty() || out.busy {
                    continue;
                }
            }
            out.busy = true;
            // Swap in the spare buffer so callers keep appending while we write.
            let spare = std::mem::take(&mut out.spare);
            shared.begin_write();
            std::mem::replace(&mut out.buf, spare)
        };
        let result = shared.socket.lock().write_all(&batch);
        shared.out.lock().spare = super::writing::reuse(batch);
        shared.finish_write(result);
    }
}
