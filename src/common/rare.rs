//! `Rare<T>`: a part of a structure most instances leave at its default, 8 bytes until it
//! holds something. Flows keep their NAKs and anomalies' evidence so; report entries their
//! recovery, READ latency and NAK figures (a report of many short flows was mostly zeros).

use serde::{Serialize, Serializer};

/// 8 bytes until first written, when it is allocated. Reads of an empty one see the default;
/// it serializes as the value it reads as.
#[derive(Debug, Clone, Default)]
pub struct Rare<T>(Option<Box<T>>);

/// A type's default, made once, for the reads of an empty `Rare`.
pub trait Empty: Default + 'static {
    fn empty() -> &'static Self;
}

/// Implements `Empty` for a type with a `Default`.
#[macro_export]
macro_rules! empty {
    ($t:ty) => {
        impl $crate::common::rare::Empty for $t {
            fn empty() -> &'static Self {
                static EMPTY: std::sync::LazyLock<$t> = std::sync::LazyLock::new(<$t>::default);
                &EMPTY
            }
        }
    };
}

impl<T: Empty + PartialEq> Rare<T> {
    /// `value`, allocated only when it is not the default.
    pub fn of(value: T) -> Self {
        if value == T::default() {
            Rare(None)
        } else {
            Rare(Some(Box::new(value)))
        }
    }
}

impl<T> Rare<T> {
    /// Back to the default, freeing what it held (`clear()` through `DerefMut` would allocate
    /// an empty one).
    pub fn reset(&mut self) {
        self.0 = None;
    }

    /// Whether something was written: the common case of nothing costs no read of a default.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// The value when one was written, without the read of a default.
    pub fn get(&self) -> Option<&T> {
        self.0.as_deref()
    }

    /// The value when one was written: changes that leave a default alone need no allocation.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        self.0.as_deref_mut()
    }
}

impl<T: Empty> std::ops::Deref for Rare<T> {
    type Target = T;
    fn deref(&self) -> &T {
        match &self.0 {
            Some(t) => t,
            None => T::empty(),
        }
    }
}

/// Writing allocates.
impl<T: Empty> std::ops::DerefMut for Rare<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.get_or_insert_with(Box::default)
    }
}

impl<T: Empty + PartialEq> PartialEq for Rare<T> {
    fn eq(&self, other: &Self) -> bool {
        // Two empty ones are equal without comparing the default with itself (`Rare::of` of a
        // struct of `Rare`s, once per flow, compared every field's default: 12% of a churn).
        match (&self.0, &other.0) {
            (None, None) => true,
            _ => **self == **other,
        }
    }
}

impl<T: Empty + Serialize> Serialize for Rare<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::Rare;

    #[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
    struct Counts {
        a: u64,
    }
    crate::empty!(Counts);

    #[test]
    fn a_default_value_takes_no_allocation_and_reads_and_serializes_as_itself() {
        let zero = Rare::of(Counts::default());
        assert!(zero.0.is_none());
        assert_eq!(serde_json::to_string(&zero).unwrap(), r#"{"a":0}"#);
        let mut some = Rare::of(Counts { a: 3 });
        assert_eq!(some.a, 3);
        assert_eq!(serde_json::to_string(&some).unwrap(), r#"{"a":3}"#);
        let mut written = Rare::<Counts>::default();
        written.a += 1;
        assert_eq!(written, Rare::of(Counts { a: 1 }));
        some.a = 1;
        assert_eq!(some, written);
    }

    #[test]
    fn an_empty_one_equals_one_written_back_to_the_default_and_no_other() {
        let empty = Rare::<Counts>::default();
        let mut reset = Rare::of(Counts { a: 2 });
        assert_ne!(empty, reset);
        assert_ne!(reset, empty);
        reset.a = 0;
        assert!(reset.is_set());
        assert_eq!(empty, reset);
        assert_eq!(reset, empty);
        assert_eq!(empty, Rare::default());
    }
}
