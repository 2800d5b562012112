use std::{fmt, str::FromStr};

use serde::Serialize;
use thiserror::Error;

use crate::{BANK_BYTES, WARP_SIZE};

/// Load (`LDS`) or store (`STS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    #[serde(rename = "ld")]
    Load,
    #[serde(rename = "st")]
    Store,
}

impl FromStr for Op {
    type Err = RequestError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "ld" | "load" => Ok(Op::Load),
            "st" | "store" => Ok(Op::Store),
            other => Err(RequestError::UnknownOp(other.to_owned())),
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Load => "ld",
            Op::Store => "st",
        })
    }
}

/// Bytes each lane accesses: the widths of `LDS`/`STS` (`.U8`, `.U16`, 32, `.64`, `.128`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Width {
    W1,
    W2,
    W4,
    W8,
    W16,
}

impl Width {
    pub const ALL: [Width; 5] = [Width::W1, Width::W2, Width::W4, Width::W8, Width::W16];

    pub fn bytes(self) -> u32 {
        match self {
            Width::W1 => 1,
            Width::W2 => 2,
            Width::W4 => 4,
            Width::W8 => 8,
            Width::W16 => 16,
        }
    }

    /// The 32-bit words an access of this width at `address` touches.
    pub fn words(self, address: u32) -> std::ops::Range<u32> {
        let first = address / BANK_BYTES;
        first..first + self.bytes().div_ceil(BANK_BYTES)
    }

    /// The C type a lesson would use for this width.
    pub fn c_type(self) -> &'static str {
        match self {
            Width::W1 => "char",
            Width::W2 => "half",
            Width::W4 => "float",
            Width::W8 => "double",
            Width::W16 => "float4",
        }
    }
}

impl TryFrom<u32> for Width {
    type Error = RequestError;
    fn try_from(bytes: u32) -> Result<Self, Self::Error> {
        Width::ALL.into_iter().find(|w| w.bytes() == bytes).ok_or(RequestError::UnsupportedWidth(bytes))
    }
}

impl FromStr for Width {
    type Err = RequestError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bytes = text.trim().parse::<u32>().map_err(|_| RequestError::BadWidth(text.trim().to_owned()))?;
        Width::try_from(bytes)
    }
}

impl fmt::Display for Width {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.bytes())
    }
}

impl Serialize for Width {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.bytes())
    }
}

/// Why a request is not a valid shared-memory instruction.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum RequestError {
    #[error("unknown op `{0}`: use `ld` (load) or `st` (store)")]
    UnknownOp(String),
    #[error("width `{0}` is not a number of bytes: use 1, 2, 4, 8 or 16")]
    BadWidth(String),
    #[error("width {0} bytes is not a shared-memory access width: use 1, 2, 4, 8 or 16")]
    UnsupportedWidth(u32),
    #[error("expected 32 lane addresses (one per lane, `_` for an inactive lane), found {0}")]
    LaneCount(usize),
    #[error("lane {lane}: `{text}` is not a byte address (a non-negative integer, or `_` for an inactive lane)")]
    BadAddress { lane: usize, text: String },
    #[error(
        "lane {lane}: byte address {address} is not aligned to the {width}-byte access width \
         (the nearest aligned addresses are {below} and {above})",
        below = address / width * width,
        above = address / width * width + width
    )]
    Misaligned { lane: usize, address: u32, width: u32 },
}

/// One warp-wide shared-memory instruction: what the model takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    pub width: Width,
    /// Byte address of each lane; `None` for an inactive lane.
    pub lanes: [Option<u32>; WARP_SIZE],
}

impl Request {
    /// Checks every active lane's address is aligned to the access width, as the hardware requires.
    pub fn new(op: Op, width: Width, lanes: [Option<u32>; WARP_SIZE]) -> Result<Self, RequestError> {
        for (lane, address) in lanes.iter().enumerate() {
            if let Some(address) = *address
                && address % width.bytes() != 0
            {
                return Err(RequestError::Misaligned { lane, address, width: width.bytes() });
            }
        }
        Ok(Request { op, width, lanes })
    }

    /// Lane `i` accesses element `i * stride` of an array of `width`-byte elements.
    pub fn strided(op: Op, width: Width, stride: u32) -> Result<Self, RequestError> {
        Request::new(op, width, std::array::from_fn(|lane| Some(lane as u32 * stride * width.bytes())))
    }
}

/// Parses `a0,a1,...,a31`: 32 comma-separated byte addresses, `_` for an inactive lane.
pub fn parse_addresses(text: &str) -> Result<[Option<u32>; WARP_SIZE], RequestError> {
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    if fields.len() != WARP_SIZE {
        return Err(RequestError::LaneCount(fields.len()));
    }
    let mut lanes = [None; WARP_SIZE];
    for (lane, field) in fields.into_iter().enumerate() {
        if field != "_" {
            let address = field.parse().map_err(|_| RequestError::BadAddress { lane, text: field.to_owned() })?;
            lanes[lane] = Some(address);
        }
    }
    Ok(lanes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_addresses_with_inactive_lanes() {
        let text = (0..32).map(|i| if i % 2 == 0 { (i * 4).to_string() } else { "_".into() });
        let lanes = parse_addresses(&text.collect::<Vec<_>>().join(",")).unwrap();
        assert_eq!(lanes[2], Some(8));
        assert_eq!(lanes[3], None);
    }

    #[test]
    fn rejects_bad_input_with_the_reason() {
        assert_eq!(parse_addresses("0,4,8"), Err(RequestError::LaneCount(3)));
        let mut fields = vec!["0"; 32];
        fields[5] = "x1";
        assert_eq!(parse_addresses(&fields.join(",")), Err(RequestError::BadAddress { lane: 5, text: "x1".into() }));
        assert_eq!("3".parse::<Width>(), Err(RequestError::UnsupportedWidth(3)));
        assert!(matches!("lds".parse::<Op>(), Err(RequestError::UnknownOp(_))));
        let mut lanes = [Some(0); 32];
        lanes[9] = Some(6);
        let err = Request::new(Op::Load, Width::W4, lanes).unwrap_err();
        assert_eq!(
            err.to_string(),
            "lane 9: byte address 6 is not aligned to the 4-byte access width \
             (the nearest aligned addresses are 4 and 8)"
        );
    }
}
