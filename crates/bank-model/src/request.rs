use std::{fmt, str::FromStr};

use serde::Serialize;
use thiserror::Error;

use crate::{BANK_BYTES, WARP_SIZE};

/// How many 8x8 matrices of 16-bit elements one `ldmatrix`/`stmatrix` moves: `.x1`, `.x2` or
/// `.x4`. Lanes `8 * i .. 8 * i + 8` give the eight 16-byte row addresses of matrix `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Matrices {
    X1,
    X2,
    X4,
}

impl Matrices {
    pub const ALL: [Matrices; 3] = [Matrices::X1, Matrices::X2, Matrices::X4];

    pub fn count(self) -> usize {
        match self {
            Matrices::X1 => 1,
            Matrices::X2 => 2,
            Matrices::X4 => 4,
        }
    }

    /// The lanes that give row addresses: 8 per matrix, from lane 0.
    pub fn address_lanes(self) -> usize {
        8 * self.count()
    }
}

/// A warp-wide shared-memory instruction: what it does with the lane addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// `ld.shared` (`LDS`): each active lane reads `width` bytes at its address.
    Load,
    /// `st.shared` (`STS`): each active lane writes `width` bytes at its address.
    Store,
    /// `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16` (`LDSM`): lanes give the
    /// 16-byte rows of each 8x8 matrix; `.trans` only changes which lane gets which element.
    LoadMatrix { matrices: Matrices, trans: bool },
    /// `stmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16` (`STSM`, sm_90): the same
    /// addressing, writing.
    StoreMatrix { matrices: Matrices, trans: bool },
    /// The shared-memory side of `cp.async.ca.shared.global` (`LDGSTS`) of 4, 8 or 16 bytes:
    /// each active lane's bytes land at its shared address.
    CopyAsync,
}

impl Op {
    /// Whether the instruction reads shared memory (else it writes it).
    pub fn reads(self) -> bool {
        matches!(self, Op::Load | Op::LoadMatrix { .. })
    }

    /// For `ldmatrix`/`stmatrix`: how many matrices.
    pub fn matrices(self) -> Option<Matrices> {
        match self {
            Op::LoadMatrix { matrices, .. } | Op::StoreMatrix { matrices, .. } => Some(matrices),
            _ => None,
        }
    }

    /// `lanes` as this op reads them: for `ldmatrix`/`stmatrix`, the lanes past the matrices'
    /// row addresses give none (an index expression gives every lane an address).
    pub fn address_lanes(self, lanes: [Option<u32>; WARP_SIZE]) -> [Option<u32>; WARP_SIZE] {
        let used = self.matrices().map_or(WARP_SIZE, Matrices::address_lanes);
        std::array::from_fn(|lane| lanes[lane].filter(|_| lane < used))
    }

    /// The names `FromStr` accepts, for error messages and help text.
    pub const NAMES: &str = "`ld`, `st`, `ldmatrix.x1`, `ldmatrix.x2`, `ldmatrix.x4` (each may end in `.trans`), \
                             `stmatrix.x1` .. `stmatrix.x4` (likewise), `cp.async`";
}

impl FromStr for Op {
    type Err = RequestError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let unknown = || RequestError::UnknownOp(text.to_owned());
        match text {
            "ld" | "load" => return Ok(Op::Load),
            "st" | "store" => return Ok(Op::Store),
            "cp.async" => return Ok(Op::CopyAsync),
            _ => {}
        }
        let (load, rest) = match (text.strip_prefix("ldmatrix."), text.strip_prefix("stmatrix.")) {
            (Some(rest), _) => (true, rest),
            (_, Some(rest)) => (false, rest),
            _ => return Err(unknown()),
        };
        let (count, trans) = match rest.strip_suffix(".trans") {
            Some(count) => (count, true),
            None => (rest, false),
        };
        let matrices = match count {
            "x1" => Matrices::X1,
            "x2" => Matrices::X2,
            "x4" => Matrices::X4,
            _ => return Err(unknown()),
        };
        Ok(if load { Op::LoadMatrix { matrices, trans } } else { Op::StoreMatrix { matrices, trans } })
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, matrices, trans) = match *self {
            Op::Load => return f.write_str("ld"),
            Op::Store => return f.write_str("st"),
            Op::CopyAsync => return f.write_str("cp.async"),
            Op::LoadMatrix { matrices, trans } => ("ldmatrix", matrices, trans),
            Op::StoreMatrix { matrices, trans } => ("stmatrix", matrices, trans),
        };
        write!(f, "{name}.x{}{}", matrices.count(), if trans { ".trans" } else { "" })
    }
}

impl Serialize for Op {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
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
    #[error("unknown op `{0}`: use {names}", names = Op::NAMES)]
    UnknownOp(String),
    #[error("`{op}` moves rows of {expected} bytes: use width {expected}, not {width}")]
    OpWidth { op: Op, width: u32, expected: u32 },
    #[error("`cp.async` copies 4, 8 or 16 bytes per lane, not {0}")]
    CopyWidth(u32),
    #[error(
        "`{op}`: lane {lane} {problem} (lanes 0-{last} give the matrices' row addresses and must all be \
         given; lanes after them must be `_`)",
        last = op.matrices().map_or(0, |m| m.address_lanes() - 1)
    )]
    MatrixLanes { op: Op, lane: usize, problem: &'static str },
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
        if let Some(matrices) = op.matrices() {
            if width != Width::W16 {
                return Err(RequestError::OpWidth { op, width: width.bytes(), expected: 16 });
            }
            for (lane, address) in lanes.iter().enumerate() {
                let problem = match (lane < matrices.address_lanes(), address) {
                    (true, None) => "is inactive",
                    (false, Some(_)) => "has an address",
                    _ => continue,
                };
                return Err(RequestError::MatrixLanes { op, lane, problem });
            }
        }
        if op == Op::CopyAsync && width.bytes() < 4 {
            return Err(RequestError::CopyWidth(width.bytes()));
        }
        for (lane, address) in lanes.iter().enumerate() {
            if let Some(address) = *address
                && address % width.bytes() != 0
            {
                return Err(RequestError::Misaligned { lane, address, width: width.bytes() });
            }
        }
        Ok(Request { op, width, lanes })
    }

    /// Every lane active, lane `l` at byte address `address(l)`.
    pub fn bytes(op: Op, width: Width, address: impl Fn(u32) -> u32) -> Result<Self, RequestError> {
        Request::new(op, width, std::array::from_fn(|lane| Some(address(lane as u32))))
    }

    /// Every lane active, lane `l` accessing element `element(l)` of an array of `width`-byte
    /// elements. Element indices are always aligned, so this cannot fail.
    pub fn elements(op: Op, width: Width, element: impl Fn(u32) -> u32) -> Self {
        Request::bytes(op, width, |lane| element(lane) * width.bytes()).expect("element addresses are aligned")
    }

    /// Lane `i` accesses element `i * stride` of an array of `width`-byte elements.
    pub fn strided(op: Op, width: Width, stride: u32) -> Result<Self, RequestError> {
        Ok(Request::elements(op, width, |lane| lane * stride))
    }

    /// A column read: lane `l` reads element `column` of row `l` of a row-major tile of
    /// `width`-byte elements, `pitch` elements per row.
    pub fn column(width: Width, pitch: u32, column: u32) -> Self {
        Request::elements(Op::Load, width, |lane| lane * pitch + column)
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

    #[test]
    fn matrix_and_copy_ops_parse_and_check_their_lanes() {
        for name in ["ldmatrix.x1", "ldmatrix.x4.trans", "stmatrix.x2", "stmatrix.x2.trans", "cp.async", "ld", "st"] {
            assert_eq!(name.parse::<Op>().unwrap().to_string(), name);
        }
        assert!(matches!("ldmatrix.x3".parse::<Op>(), Err(RequestError::UnknownOp(_))));
        let x2: Op = "ldmatrix.x2".parse().unwrap();
        let rows: [Option<u32>; WARP_SIZE] = std::array::from_fn(|lane| (lane < 16).then_some(lane as u32 * 16));
        assert!(Request::new(x2, Width::W16, rows).is_ok());
        assert_eq!(
            Request::new(x2, Width::W8, rows).unwrap_err().to_string(),
            "`ldmatrix.x2` moves rows of 16 bytes: use width 16, not 8"
        );
        let mut extra = rows;
        extra[20] = Some(0);
        assert_eq!(
            Request::new(x2, Width::W16, extra).unwrap_err().to_string(),
            "`ldmatrix.x2`: lane 20 has an address (lanes 0-15 give the matrices' row addresses and must all \
             be given; lanes after them must be `_`)"
        );
        let mut missing = rows;
        missing[3] = None;
        assert!(Request::new(x2, Width::W16, missing).unwrap_err().to_string().contains("lane 3 is inactive"));
        assert_eq!(Request::new(Op::CopyAsync, Width::W2, [Some(0); WARP_SIZE]), Err(RequestError::CopyWidth(2)));
    }
}
