//! The writer thread: takes everything queued since its last turn and writes it with
//! one call, so many concurrent callers become one pipelined write.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Shared;

/// Caller requests in flight above which the writer yields once before writing. Measured
/// (interleaved runs, GET/SET against redis-rs with a connection per thread): 16
/// threads 1.33-1.36x without the yield, 1.49-1.62x with it; 64 threads 1.38-1.78x
/// without, 1.87-2.13x with; a lone caller never waits for it.
const LINGER_ABOVE: usize = 4;

pub(super) fn run(shared: Arc<Shared>) {
    loop {
        let mut batch = {
            let mut out = shared.out.lock();
            while (out.buf.is_empty() || out.busy) && !out.closed {
                shared.writer_wake.wait(&mut out);
            }
            if out.closed {
                return;
            }
            // The in-flight counter, not the waiters' queue: no second lock per write.
            if shared.caller_inflight.load(Ordering::Relaxed) > LINGER_ABOVE {
                // Many callers in flight: the ones just woken by their replies are about
                // to queue their next command; one yield lets them join this write.
                drop(out);
                std::thread::yield_now();
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
            shared.flushed.fetch_add(1, Ordering::AcqRel);
            std::mem::replace(&mut out.buf, spare)
        };
        let result = shared.socket.lock().write_all(&batch);
        batch.clear();
        // Keep the larger of the two buffers' allocations around, but do not hold on
        // to a huge one after a single large frame went through.
        if batch.capacity() > 4 * 1024 * 1024 {
            batch = Vec::with_capacity(16 * 1024);
        }
        shared.out.lock().spare = batch;
        shared.finish_write(result);
    }
}
