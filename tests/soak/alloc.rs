//! The soak's global allocator: counts the live heap, and keeps the soak's own large
//! buffers out of the C allocator, so that what the process keeps resident can be told
//! apart: the client's, or the soak's.
//!
//! Why: after a multi-MiB buffer is freed, glibc raises its mmap threshold, and later
//! large buffers come from per-thread arenas that keep their pages after a free. The
//! soak itself makes such buffers (its 4–8 MiB values, its proxies decoding and
//! holding whole frames), as the client does for the frames it encodes and the values
//! it decodes. Here a large buffer (≥ [`LARGE`]) allocated on the soak's side is
//! mapped and unmapped directly, so it is resident only while it lives; everything
//! else (all of the client's allocations, and the soak's small ones) goes to the C
//! allocator as it would in an application. RSS minus the soak's large buffers still
//! alive is then the client's share, plus the soak's small-object heap.
//!
//! A thread is on the soak's side once it calls [`soak_thread`] (the workers, the
//! proxies, the fault schedule); a client call made from it ([`client_side`]) is on the
//! client's side for its duration, like every allocation on the client's own threads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// A buffer at least this large, allocated on the soak's side, is mapped directly.
pub const LARGE: usize = 256 * 1024;

thread_local! {
    static SOAK_SIDE: Cell<bool> = const { Cell::new(false) };
}

/// Puts the calling thread on the soak's side.
pub fn soak_thread() {
    SOAK_SIDE.with(|s| s.set(true));
}

/// Runs a client call on the client's side (its allocations go to the C allocator).
pub fn client_side<R>(f: impl FnOnce() -> R) -> R {
    let was = SOAK_SIDE.with(|s| s.replace(false));
    let out = f();
    SOAK_SIDE.with(|s| s.set(was));
    out
}

fn on_soak_side() -> bool {
    SOAK_SIDE.try_with(Cell::get).unwrap_or(false)
}

/// Counts the live heap, and maps the soak's large buffers (see the module
/// documentation).
pub struct CountingAlloc;

static LIVE: AtomicI64 = AtomicI64::new(0);
/// Bytes of the soak's large buffers mapped now.
static SOAK_MAPPED: AtomicI64 = AtomicI64::new(0);
/// Where the soak's large buffers are (0: a free slot); a full table sends more to
/// the C allocator.
const SLOTS: usize = 4096;
static MAPPED: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

impl CountingAlloc {
    /// Bytes allocated and not freed.
    pub fn live() -> u64 {
        u64::try_from(LIVE.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// Bytes of the soak's own large buffers alive now (resident, mapped directly).
    pub fn soak_mapped() -> u64 {
        u64::try_from(SOAK_MAPPED.load(Ordering::Relaxed)).unwrap_or(0)
    }
}

fn signed(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn page_rounded(n: usize) -> usize {
    n.div_ceil(4096) * 4096
}

/// Maps `size` bytes and records where; null when that fails or the table is full.
fn map(size: usize) -> *mut u8 {
    use rustix::mm::{mmap_anonymous, MapFlags, ProtFlags};
    // SAFETY: a fresh private anonymous mapping, unmapped only by `unmap`.
    let Ok(p) = (unsafe {
        mmap_anonymous(
            std::ptr::null_mut(),
            page_rounded(size),
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE,
        )
    }) else {
        return std::ptr::null_mut();
    };
    let addr = p as usize;
    if MAPPED.iter().any(|slot| {
        slot.compare_exchange(0, addr, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }) {
        SOAK_MAPPED.fetch_add(signed(size), Ordering::Relaxed);
        return p.cast();
    }
    // SAFETY: just mapped above, never handed out.
    let _ = unsafe { rustix::mm::munmap(p, page_rounded(size)) };
    std::ptr::null_mut()
}

/// Unmaps `ptr` if it is one of the soak's large buffers; whether it was.
fn unmap(ptr: *mut u8, size: usize) -> bool {
    if size < LARGE {
        return false;
    }
    let addr = ptr as usize;
    let Some(slot) = MAPPED.iter().find(|s| s.load(Ordering::Acquire) == addr) else {
        return false;
    };
    slot.store(0, Ordering::Release);
    SOAK_MAPPED.fetch_sub(signed(size), Ordering::Relaxed);
    // SAFETY: mapped by `map` with this size, and no longer handed out.
    let _ = unsafe { rustix::mm::munmap(ptr.cast(), page_rounded(size)) };
    true
}

// SAFETY: a layout's alignment is at most a page for the sizes mapped here (mappings
// are page-aligned); everything else is forwarded to `System` unchanged.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut p = std::ptr::null_mut();
        if layout.size() >= LARGE && layout.align() <= 4096 && on_soak_side() {
            p = map(layout.size());
        }
        if p.is_null() {
            // SAFETY: the caller's contract is `System`'s.
            p = unsafe { System.alloc(layout) };
        }
        if !p.is_null() {
            LIVE.fetch_add(signed(layout.size()), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE && layout.align() <= 4096 && on_soak_side() {
            // A fresh anonymous mapping is zeroed.
            let p = map(layout.size());
            if !p.is_null() {
                LIVE.fetch_add(signed(layout.size()), Ordering::Relaxed);
                return p;
            }
        }
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(signed(layout.size()), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !unmap(ptr, layout.size()) {
            // SAFETY: not one of ours, so `System`'s.
            unsafe { System.dealloc(ptr, layout) };
        }
        LIVE.fetch_sub(signed(layout.size()), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        let mapped = layout.size() >= LARGE
            && MAPPED
                .iter()
                .any(|s| s.load(Ordering::Acquire) == ptr as usize);
        let grows_large = new >= LARGE && on_soak_side();
        if !mapped && !grows_large {
            // SAFETY: as above.
            let p = unsafe { System.realloc(ptr, layout, new) };
            if !p.is_null() {
                LIVE.fetch_add(signed(new) - signed(layout.size()), Ordering::Relaxed);
            }
            return p;
        }
        // SAFETY: a valid layout of the same alignment and the new size.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new, layout.align()) };
        // SAFETY: allocate, copy what both hold, free the old one: realloc's contract.
        unsafe {
            let p = self.alloc(new_layout);
            if !p.is_null() {
                std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new));
                self.dealloc(ptr, layout);
            }
            p
        }
    }
}
