//! Enums whose values are named by strings in configs and on the command line (`current`, `2025-09-27`, …).

/// A string that names none of a kind's values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{given}` (expected {expected})")]
pub struct UnknownName {
    /// The kind, as error messages name it (`split variant`, `cache mode`).
    pub what: &'static str,
    pub given: String,
    /// The accepted names, as a phrase (`one of: a, b, c`).
    pub expected: String,
}

/// Implements `name()`, `ALL`, `Display`, `FromStr` (with an error listing the names) and the serde string
/// conversions for an enum of named variants (declared `#[serde(try_from = "String", into = "String")]`).
/// `$what` names the kind in error messages. Every enum whose values are written in configs, files or on
/// the command line is named this way, in every crate.
#[macro_export]
macro_rules! named_variants {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::named::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $ty::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| {
                    let names: Vec<_> = $ty::ALL.iter().map(|v| v.name()).collect();
                    $crate::named::UnknownName {
                        what: $what,
                        given: s.to_string(),
                        expected: format!("one of: {}", names.join(", ")),
                    }
                })
            }
        }

        impl TryFrom<String> for $ty {
            type Error = $crate::named::UnknownName;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                s.parse()
            }
        }

        impl From<$ty> for String {
            fn from(v: $ty) -> String {
                v.name().to_string()
            }
        }
    };
}
