//! How `Duration`s become command arguments: expiries in milliseconds, block times of
//! blocking commands in (decimal) seconds or milliseconds.
//!
//! Every conversion rounds *up* to the unit the server understands, because a zero in
//! these positions means something very different from "a little": `BLPOP k 0` and
//! `XREAD BLOCK 0` block forever, `WAIT n 0` waits forever, and `PX 0` is an error. A
//! caller asking for 300 µs must get 1 ms, never "forever".

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::ArgWriter;
use super::ToArgs;

/// Whole milliseconds, rounded up, saturating at `u64::MAX` (which the server then
/// refuses as out of range rather than us wrapping around to a small number).
pub(crate) fn millis_ceil(d: Duration) -> u64 {
    let ms = d.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// Whole seconds, rounded up.
pub(crate) fn seconds_ceil(d: Duration) -> u64 {
    let s = d.as_nanos().div_ceil(1_000_000_000);
    u64::try_from(s).unwrap_or(u64::MAX)
}

/// Milliseconds since the Unix epoch (0 for times before it: already expired).
pub(crate) fn unix_millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Whole seconds since the Unix epoch (0 for times before it).
pub(crate) fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The timeout argument of `BLPOP`, `BZPOPMIN`, `BLMOVE` ...: seconds as a decimal with
/// millisecond precision (`0.5`, `2`, `0.001`); Redis 6+ accepts fractions and keeps
/// millisecond resolution. `Duration::ZERO` is `0`: block forever.
pub(crate) struct BlockSeconds(pub Duration);

impl ToArgs for BlockSeconds {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        let ms = millis_ceil(self.0);
        let (secs, frac) = (ms / 1000, ms % 1000);
        if frac == 0 {
            out.write(secs.to_string().as_bytes());
        } else {
            let text = format!("{secs}.{frac:03}");
            out.write(text.trim_end_matches('0').as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cmd;

    fn arg_text(arg: impl ToArgs) -> String {
        let cmd = Cmd::new("X").arg(arg);
        let frame = String::from_utf8(cmd.frame().to_vec()).unwrap();
        frame.rsplit("\r\n").nth(1).unwrap().to_string()
    }

    #[test]
    fn rounding_is_up_so_small_never_becomes_forever() {
        assert_eq!(millis_ceil(Duration::from_micros(300)), 1);
        assert_eq!(millis_ceil(Duration::from_millis(1500)), 1500);
        assert_eq!(millis_ceil(Duration::ZERO), 0);
        assert_eq!(millis_ceil(Duration::MAX), u64::MAX);
        assert_eq!(seconds_ceil(Duration::from_millis(1001)), 2);
        assert_eq!(seconds_ceil(Duration::from_secs(3)), 3);
    }

    #[test]
    fn block_seconds_are_decimal_with_millisecond_precision() {
        assert_eq!(arg_text(BlockSeconds(Duration::from_millis(500))), "0.5");
        assert_eq!(arg_text(BlockSeconds(Duration::from_secs(2))), "2");
        assert_eq!(arg_text(BlockSeconds(Duration::from_millis(1250))), "1.25");
        assert_eq!(arg_text(BlockSeconds(Duration::from_micros(1))), "0.001");
        assert_eq!(arg_text(BlockSeconds(Duration::ZERO)), "0");
    }

    #[test]
    fn unix_times_clamp_before_the_epoch() {
        let before = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(unix_millis(before), 0);
        assert_eq!(unix_seconds(UNIX_EPOCH + Duration::from_millis(2500)), 2);
        assert_eq!(unix_millis(UNIX_EPOCH + Duration::from_millis(2500)), 2500);
    }
}
