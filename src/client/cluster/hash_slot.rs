//! Hash slots: CRC16 (XMODEM) of the key, or of its `{hash tag}`, modulo 16384.

/// Number of hash slots in a Redis Cluster.
pub const SLOT_COUNT: u16 = 16384;

/// The slot a key hashes to.
///
/// ```
/// use resilient_redis::cluster::key_slot;
/// assert_eq!(key_slot(b"foo"), 12182);
/// assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
/// ```
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) % SLOT_COUNT
}

/// The part of the key that is hashed: the content of the first `{...}` when it is
/// non-empty, else the whole key (the cluster specification's rule).
fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis uses.
fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_cluster_specification() {
        // Reference values from the Redis cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b""), 0);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        // Empty tag, or no closing brace: the whole key is hashed.
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOT_COUNT);
        assert_eq!(key_slot(b"foo{bar"), crc16(b"foo{bar") % SLOT_COUNT);
        assert_eq!(key_slot(b"foo{{bar}}zap"), crc16(b"{bar") % SLOT_COUNT);
    }
}
