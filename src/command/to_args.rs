//! `ToArgs`: turning Rust values into command arguments.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::cmd::ArgWriter;

/// A value that becomes one or more command arguments.
///
/// Strings and bytes are one argument; numbers are written in decimal; sequences,
/// tuples and maps write their items (maps as key, value, key, value).
pub trait ToArgs {
    /// Writes the arguments.
    fn write_args(&self, out: &mut ArgWriter<'_>);

    /// Writes a slice of `Self`: one argument per item, except bytes, where the whole
    /// slice is one argument (so `Vec<u8>` and `&[u8]` are binary-safe strings).
    #[doc(hidden)]
    fn write_slice(items: &[Self], out: &mut ArgWriter<'_>)
    where
        Self: Sized,
    {
        for item in items {
            item.write_args(out)
        }
    }
}

impl<T: ToArgs + ?Sized> ToArgs for &T {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        (**self).write_args(out)
    }
}

impl ToArgs for str {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        out.write(self.as_bytes())
    }
}

impl ToArgs for String {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        out.write(self.as_bytes())
    }
}

impl ToArgs for u8 {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        out.write_int(i64::from(*self))
    }

    fn write_slice(items: &[u8], out: &mut ArgWriter<'_>) {
        out.write(items)
    }
}

impl ToArgs for bool {
    /// `1` or `0`, as Redis spells booleans in arguments.
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        out.write_int(i64::from(*self))
    }
}

macro_rules! int_args {
    ($($t:ty),*) => {$(
        impl ToArgs for $t {
            fn write_args(&self, out: &mut ArgWriter<'_>) {
                out.write_int(*self as i64)
            }
        }
    )*};
}
int_args!(i8, i16, i32, i64, u16, u32, isize);

macro_rules! wide_int_args {
    ($($t:ty),*) => {$(
        impl ToArgs for $t {
            fn write_args(&self, out: &mut ArgWriter<'_>) {
                match i64::try_from(*self) {
                    Ok(n) => out.write_int(n),
                    Err(_) => out.write(self.to_string().as_bytes()),
                }
            }
        }
    )*};
}
wide_int_args!(u64, usize, i128, u128);

macro_rules! float_args {
    ($($t:ty),*) => {$(
        impl ToArgs for $t {
            /// Shortest round-trip form; infinities as Redis spells them (`+inf`, `-inf`).
            fn write_args(&self, out: &mut ArgWriter<'_>) {
                if self.is_infinite() {
                    out.write(if *self > 0.0 { b"+inf" } else { b"-inf" })
                } else {
                    out.write(self.to_string().as_bytes())
                }
            }
        }
    )*};
}
float_args!(f32, f64);

impl<T: ToArgs> ToArgs for [T] {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        T::write_slice(self, out)
    }
}

impl<T: ToArgs> ToArgs for Vec<T> {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        self.as_slice().write_args(out)
    }
}

impl<T: ToArgs, const N: usize> ToArgs for [T; N] {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        self.as_slice().write_args(out)
    }
}

impl<T: ToArgs> ToArgs for Option<T> {
    /// `None` writes nothing.
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        if let Some(v) = self {
            v.write_args(out)
        }
    }
}

impl<T: ToArgs, S> ToArgs for HashSet<T, S> {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        for item in self {
            item.write_args(out)
        }
    }
}

impl<K: ToArgs, V: ToArgs, S> ToArgs for HashMap<K, V, S> {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        for (k, v) in self {
            k.write_args(out);
            v.write_args(out);
        }
    }
}

impl<K: ToArgs, V: ToArgs> ToArgs for BTreeMap<K, V> {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        for (k, v) in self {
            k.write_args(out);
            v.write_args(out);
        }
    }
}

macro_rules! tuple_args {
    ($($name:ident)+) => {
        impl<$($name: ToArgs),+> ToArgs for ($($name,)+) {
            #[allow(non_snake_case)]
            fn write_args(&self, out: &mut ArgWriter<'_>) {
                let ($($name,)+) = self;
                $($name.write_args(out);)+
            }
        }
    };
}
tuple_args!(A);
tuple_args!(A B);
tuple_args!(A B C);
tuple_args!(A B C D);
tuple_args!(A B C D E);
