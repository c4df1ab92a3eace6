//! The writer thread: takes everything queued since its last turn and writes it with
//! one call, so many concurrent callers become one pipelined write.

use std::sync::Arc;

use super::Shared;

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
            out.busy = true;
            // Swap in the spare buffer so callers keep appending while we write.
            let spare = std::mem::take(&mut out.spare);
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
