//! Command encoder (stub: being written).
use super::Value;
/// `*argc\r\n`
pub fn write_command_header(_buf: &mut Vec<u8>, _argc: usize) {
    todo!()
}
/// `$len\r\narg\r\n`
pub fn write_arg(_buf: &mut Vec<u8>, _arg: &[u8]) {
    todo!()
}
/// An integer argument as a bulk string, without allocating.
pub fn write_int_arg(_buf: &mut Vec<u8>, _n: i64) {
    todo!()
}
/// Any value in RESP3 wire form.
pub fn encode_value(_buf: &mut Vec<u8>, _v: &Value) {
    todo!()
}
