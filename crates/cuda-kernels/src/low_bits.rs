//! The low bits of each register a function's code may know, counted from the address it was made
//! from: `table + 16 * i` is known to be 0 past `table`'s address modulo 16, so a 64-bit read there
//! reads the first word of one of `table`'s 16-byte members. A table of structs that hold a
//! pointer and a number (`{{by_row, 7u}, {by_column, 3u}}`) holds an address in every other word,
//! and [`crate::address_origins`] tells which word a read reads by them. Members whose size is
//! not a power of two (24 bytes, `{7u, by_row, 3u}`) are told apart by a remainder by an odd
//! number too: `table + 24 * i + 8` is 0 modulo 8 and 2 modulo 3.
//!
//! The bits are followed through every instruction until nothing new is found, addresses counted as
//! 0 (a name, a register the launch set, `cvta`'s change of window), what a load reads as unknown.
//! They are read from NVRTC's code, before the grader writes 0 to every register where a function
//! starts: a register read before it is written on some path then holds 0, which its bits may not
//! allow, and [`crate::module_variables`] holds a read at it to the words they allow all the same.

use std::collections::{BTreeMap, BTreeSet};

use crate::ptx_text::{Statement, of_a_float, words};

/// What is known of a value: its `known` lowest bits (0 to 64) are `value`'s, and its remainder by
/// an odd number is `odd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LowBits {
    pub(crate) known: u32,
    pub(crate) value: u64,
    pub(crate) odd: OddRemainder,
}

/// A value's remainder by an odd `divisor`: nothing is known where it is 1, and the value is
/// `remainder` itself where it is 0. It is counted on the value as an integer that no sum or
/// product overflows, as an index times a member's size does not; only the low bits stay exact
/// past an overflow. A read the two tell apart is held to those words all the same
/// ([`crate::module_variables`]), so a wrong remainder can change which of them it reads, never
/// make it read another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OddRemainder {
    divisor: u64,
    remainder: i128,
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl OddRemainder {
    pub(crate) const UNKNOWN: OddRemainder = OddRemainder { divisor: 1, remainder: 0 };

    /// Of a value known to be `remainder` modulo `divisor` (where they did not overflow): modulo
    /// its odd factor.
    fn of(divisor: Option<u128>, remainder: Option<i128>) -> OddRemainder {
        let (Some(divisor), Some(remainder)) = (divisor, remainder) else { return OddRemainder::UNKNOWN };
        if divisor == 0 {
            return OddRemainder { divisor: 0, remainder };
        }
        match u64::try_from(divisor >> divisor.trailing_zeros()) {
            Ok(divisor) => OddRemainder { divisor, remainder: remainder.rem_euclid(i128::from(divisor)) },
            Err(_) => OddRemainder::UNKNOWN,
        }
    }

    fn exactly(value: i128) -> OddRemainder {
        OddRemainder { divisor: 0, remainder: value }
    }

    fn divisor(self) -> u128 {
        u128::from(self.divisor)
    }

    /// Whether a value of `at` may have this remainder.
    pub(crate) fn allows(self, at: i128) -> bool {
        match self.divisor {
            0 => at == self.remainder,
            divisor => (at - self.remainder).rem_euclid(i128::from(divisor)) == 0,
        }
    }

    fn or_else(self, other: OddRemainder) -> OddRemainder {
        let apart = self.remainder.checked_sub(other.remainder).map(i128::unsigned_abs);
        OddRemainder::of(apart.map(|apart| gcd(gcd(self.divisor(), other.divisor()), apart)), Some(self.remainder))
    }

    fn plus(self, other: OddRemainder) -> OddRemainder {
        OddRemainder::of(Some(gcd(self.divisor(), other.divisor())), self.remainder.checked_add(other.remainder))
    }

    fn minus(self, other: OddRemainder) -> OddRemainder {
        OddRemainder::of(Some(gcd(self.divisor(), other.divisor())), self.remainder.checked_sub(other.remainder))
    }

    /// `(a + p s)(b + q t)` is `ab` plus multiples of `pq`, `pb` and `qa`.
    fn times(self, other: OddRemainder) -> OddRemainder {
        let multiple = |divisor: u128, remainder: i128| divisor.checked_mul(remainder.unsigned_abs());
        let divisor = (|| {
            let both = self.divisor().checked_mul(other.divisor())?;
            Some(gcd(gcd(both, multiple(self.divisor(), other.remainder)?), multiple(other.divisor(), self.remainder)?))
        })();
        OddRemainder::of(divisor, self.remainder.checked_mul(other.remainder))
    }
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
}

impl LowBits {
    pub(crate) const UNKNOWN: LowBits = LowBits { known: 0, value: 0, odd: OddRemainder::UNKNOWN };

    /// A number's (whose 64 bits, read as a signed integer, are its value: `-8`).
    pub(crate) fn exactly(value: u64) -> LowBits {
        LowBits { known: 64, value, odd: OddRemainder::exactly(i128::from(value as i64)) }
    }

    /// The mask of the bits known.
    pub(crate) fn known_mask(self) -> u64 {
        mask(self.known)
    }

    /// Whether a value of `at` may be one of these.
    pub(crate) fn allows(self, at: u64) -> bool {
        at & self.known_mask() == self.value && self.odd.allows(i128::from(at))
    }

    /// An exact remainder that its low bits do not allow (a 32-bit sum that overflowed) is
    /// dropped.
    fn of(known: u32, value: u64, odd: OddRemainder) -> LowBits {
        let known = known.min(64);
        let value = value & mask(known);
        let agree = odd.divisor != 0 || (odd.remainder as u64) & mask(known) == value;
        LowBits { known, value, odd: if agree { odd } else { OddRemainder::UNKNOWN } }
    }

    fn low(known: u32, value: u64) -> LowBits {
        LowBits::of(known, value, OddRemainder::UNKNOWN)
    }

    /// Of a value that is `self` or `other`.
    fn or_else(self, other: LowBits) -> LowBits {
        let known = self.known.min(other.known).min((self.value ^ other.value).trailing_zeros());
        LowBits::of(known, self.value, self.odd.or_else(other.odd))
    }

    pub(crate) fn plus(self, other: LowBits) -> LowBits {
        LowBits::of(self.known.min(other.known), self.value.wrapping_add(other.value), self.odd.plus(other.odd))
    }

    fn minus(self, other: LowBits) -> LowBits {
        LowBits::of(self.known.min(other.known), self.value.wrapping_sub(other.value), self.odd.minus(other.odd))
    }

    /// `(a + 2^ka s)(b + 2^kb t)` is `ab` but for terms of `2^(kb + zeros of a)`, `2^(ka + zeros of
    /// b)` and `2^(ka + kb)`.
    fn times(self, other: LowBits) -> LowBits {
        let zeros = |bits: LowBits| if bits.value == 0 { 128 } else { bits.value.trailing_zeros() };
        let known = (other.known + zeros(self)).min(self.known + zeros(other)).min(self.known + other.known);
        LowBits::of(known, self.value.wrapping_mul(other.value), self.odd.times(other.odd))
    }

    /// A bit of `a & b` is known where both are, or where either is known to be 0.
    fn and(self, other: LowBits) -> LowBits {
        let (less, more) = if self.known <= other.known { (self, other) } else { (other, self) };
        let first_unknown = (less.known..more.known).find(|bit| more.value >> bit & 1 == 1).unwrap_or(more.known);
        LowBits::low(first_unknown, self.value & other.value)
    }

    fn shifted_left(self, by: u32) -> LowBits {
        let odd = 1i128.checked_shl(by).filter(|_| by < 64).map(OddRemainder::exactly);
        let odd = odd.map_or(OddRemainder::UNKNOWN, |power| self.odd.times(power));
        LowBits::of(self.known.saturating_add(by), self.value.checked_shl(by).unwrap_or(0), odd)
    }

    fn shifted_right(self, by: u32) -> LowBits {
        LowBits::low(self.known.saturating_sub(by), self.value.checked_shr(by).unwrap_or(0))
    }

    /// Kept to a register of `bits` bits (the remainder of a value that fits, signed or not).
    fn within(self, bits: u32) -> LowBits {
        let fits = |value: i128| bits >= 64 || (-(1i128 << (bits - 1))..1i128 << bits).contains(&value);
        let odd = if self.odd.divisor != 0 || fits(self.odd.remainder) { self.odd } else { OddRemainder::UNKNOWN };
        LowBits::of(self.known.min(bits), self.value, odd)
    }
}

/// An operand's low bits: a number's own, an address's 0 (a name `is_address` says is one), a
/// register's as far as known (`None` for one not yet known).
pub(crate) fn of_operand(
    operand: &str,
    registers: &BTreeMap<String, LowBits>,
    is_address: &dyn Fn(&str) -> bool,
) -> Option<LowBits> {
    let operand = operand.trim_matches(['[', ']']);
    let mut sum = LowBits::exactly(0);
    for term in operand.split('+') {
        let term = term.trim();
        let bits = if let Some(number) = number(term) {
            LowBits::exactly(number)
        } else if term.starts_with('%') && !term.contains('.') {
            *registers.get(term)?
        } else if is_address(term) {
            LowBits::exactly(0)
        } else {
            LowBits::UNKNOWN
        };
        sum = sum.plus(bits);
    }
    Some(sum)
}

/// A PTX integer: `48`, `-8`, `0x30`.
fn number(text: &str) -> Option<u64> {
    let (negative, digits) = text.strip_prefix('-').map_or((false, text), |rest| (true, rest));
    let value = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex.trim_end_matches('U'), 16).ok()?,
        None => digits.trim_end_matches('U').parse().ok()?,
    };
    Some(if negative { value.wrapping_neg() } else { value })
}

/// The bits of a register type word (`u32`, `s64`, `b16`), or 64.
fn register_bits(op: &str) -> u32 {
    let bits = op.split('.').skip(1).find_map(|part| part.get(1..)?.parse::<u32>().ok());
    bits.filter(|bits| *bits <= 64).unwrap_or(64)
}

/// The low bits of each register of a function's `statements`, where `is_address` tells the names
/// of addresses (a variable's, a parameter's) from other words (`WARP_SZ`). A register no
/// instruction writes is unknown, and so is a special register (`%tid`, `%clock`).
pub(crate) fn of_registers(statements: &[Statement], is_address: &dyn Fn(&str) -> bool) -> BTreeMap<String, LowBits> {
    let computing = |s: &&Statement| !s.writes_memory();
    let written: BTreeSet<&str> = statements
        .iter()
        .filter(computing)
        .filter_map(|s| s.operands.first())
        .flat_map(|destination| words(destination))
        .collect();
    let mut registers: BTreeMap<String, LowBits> = BTreeMap::new();
    for register in statements.iter().flat_map(|s| s.operands.iter()).flat_map(|o| words(o)) {
        if register.starts_with('%') && !written.contains(register) {
            registers.insert(register.to_owned(), LowBits::UNKNOWN);
        }
    }
    loop {
        let mut grew = false;
        for statement in statements.iter().filter(computing) {
            let Some((destination, sources)) = statement.operands.split_first() else { continue };
            let Some(bits) = result(statement, sources, &registers, is_address) else { continue };
            let single = destination.starts_with('%') && !destination.contains(['{', ',']);
            let bits = if single { bits } else { LowBits::UNKNOWN };
            for register in words(destination).filter(|w| w.starts_with('%')) {
                let joined = registers.get(register).map_or(bits, |known| known.or_else(bits));
                if registers.insert(register.to_owned(), joined) != Some(joined) {
                    grew = true;
                }
            }
        }
        if !grew {
            return registers;
        }
    }
}

/// What `statement` writes, from its `sources`' bits so far (`None` while one is not yet known).
fn result(
    statement: &Statement,
    sources: &[String],
    registers: &BTreeMap<String, LowBits>,
    is_address: &dyn Fn(&str) -> bool,
) -> Option<LowBits> {
    let source = |i: usize| sources.get(i).map_or(Some(LowBits::UNKNOWN), |s| of_operand(s, registers, is_address));
    let shift = || sources.get(1).and_then(|s| number(s)).and_then(|n| u32::try_from(n).ok());
    let bits = register_bits(&statement.op);
    let op = statement.op.as_str();
    // Bits of integers alone: not of a float, a saturated sum, or halves added apart (`add.u16x2`).
    let integer = |part: &str| matches!(part.get(..1), Some("u" | "s" | "b")) && part[1..].parse::<u32>().is_ok();
    let parts: Vec<&str> = op.split('.').skip(1).collect();
    if !parts.last().is_some_and(|last| integer(last)) || parts.contains(&"sat") || of_a_float(op) {
        return Some(LowBits::UNKNOWN);
    }
    let found = match statement.kind() {
        "mov" | "cvta" => source(0)?,
        // A conversion keeps the bits both widths hold (`cvt.u64.u32` of a 32-bit value).
        "cvt" => source(0)?.within(op.split('.').skip(1).map(|p| register_bits(&format!(".{p}"))).min().unwrap_or(64)),
        "add" => source(0)?.plus(source(1)?),
        "sub" => source(0)?.minus(source(1)?),
        "mul" if op.contains(".hi") => LowBits::UNKNOWN,
        "mul" => source(0)?.times(source(1)?),
        "mad" if op.contains(".hi") => LowBits::UNKNOWN,
        "mad" => source(0)?.times(source(1)?).plus(source(2)?),
        "shl" => match shift() {
            Some(by) => source(0)?.shifted_left(by),
            None => LowBits::UNKNOWN,
        },
        "shr" => match shift() {
            Some(by) => source(0)?.within(bits).shifted_right(by),
            None => LowBits::UNKNOWN,
        },
        "and" => source(0)?.and(source(1)?),
        "selp" => source(0)?.or_else(source(1)?),
        _ => LowBits::UNKNOWN,
    };
    // `mul.wide` writes twice its operands' bits.
    let bits = if op.contains(".wide") { (bits * 2).min(64) } else { bits };
    Some(found.within(bits))
}

#[cfg(test)]
mod tests;
