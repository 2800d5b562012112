//! A warp's 32 lane addresses from what a reader writes: each lane's element index as an
//! integer expression in `lane`, or a tile (rows, columns, padding, XOR or CuTe swizzle) accessed
//! at a row and a column given as expressions in `lane`. Expressions may call
//! `swizzle(B, M, S, offset)`, CuTe's `Swizzle<B, M, S>` applied to an element offset.
//!
//! `cargo xtask conflicts --index` and the book's playground both read expressions here, so the
//! two always agree on what an expression means.

use bank_model::{WARP_SIZE, Width, swizzle::Swizzle as CuteSwizzle};
use evalexpr::{
    ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes, EvalexprError, Function,
    HashMapContext, Node, Value,
};
use thiserror::Error;

/// Byte address of each lane (`None`: inactive), as [`bank_model::Request`] takes them.
pub type LaneAddresses = [Option<u32>; WARP_SIZE];

/// The largest number of rows, columns or padding elements a tile may have: far beyond any
/// shared-memory tile, and small enough that every address fits in 32 bits.
pub const MAX_TILE_SIDE: u32 = 4096;

/// Why an expression or a tile gives no addresses.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AddressError {
    #[error("`{expression}` is not an expression: {reason}")]
    Syntax { expression: String, reason: String },
    #[error("`{expression}` at lane {lane}: {reason}")]
    Evaluation { expression: String, lane: usize, reason: String },
    #[error("`{expression}` at lane {lane}: {reason}")]
    Function { expression: String, lane: usize, reason: String },
    #[error("`{expression}` gives {value} at lane {lane}: element indices must be 0 or more and fit in 32 bits")]
    IndexOutOfRange { expression: String, lane: usize, value: i64 },
    #[error("row `{expression}` gives {value} at lane {lane}: the tile's rows are 0 to {last}")]
    RowOutside { expression: String, lane: usize, value: i64, last: u32 },
    #[error("column `{expression}` gives {value} at lane {lane}: the tile's columns are 0 to {last}")]
    ColumnOutside { expression: String, lane: usize, value: i64, last: u32 },
    #[error("a tile has 1 to {MAX_TILE_SIDE} rows and columns and at most {MAX_TILE_SIDE} padding elements")]
    TileShape,
    #[error(
        "an XOR swizzle stores column c of row r at column c ^ r, which stays in the row only when the \
         number of columns is a power of two; {0} is not"
    )]
    SwizzleColumns(u32),
    #[error(
        "{swizzle} moves element ({row}, {column}) to offset {stored}, outside the tile's {size} elements; it \
         keeps every element in its row when a row is a power of two elements long, at least 2^(M+B)"
    )]
    SwizzleOutside { swizzle: CuteSwizzle, row: u32, column: u32, stored: u32, size: u32 },
}

/// An integer expression in `lane` (0-31), e.g. `lane * 33 + 1` or `bitxor(lane, lane / 4)`.
pub struct LaneExpression {
    text: String,
    tree: Node<DefaultNumericTypes>,
}

impl LaneExpression {
    pub fn parse(text: &str) -> Result<Self, AddressError> {
        let tree = evalexpr::build_operator_tree::<DefaultNumericTypes>(text)
            .map_err(|e| AddressError::Syntax { expression: text.to_owned(), reason: e.to_string() })?;
        Ok(LaneExpression { text: text.to_owned(), tree })
    }

    /// The expression's value at lanes 0 to 31.
    pub fn values(&self) -> Result<[i64; WARP_SIZE], AddressError> {
        let mut context = HashMapContext::<DefaultNumericTypes>::new();
        context.set_function("swizzle".into(), Function::new(swizzle_function)).expect("the context takes functions");
        let mut values = [0; WARP_SIZE];
        for (lane, value) in values.iter_mut().enumerate() {
            context.set_value("lane".into(), Value::from_int(lane as i64)).expect("the context takes any variable");
            *value = self.tree.eval_int_with_context(&context).map_err(|e| {
                let expression = self.text.clone();
                match e {
                    EvalexprError::CustomMessage(reason) => AddressError::Function { expression, lane, reason },
                    // An operator short of an operand (`lane *`) is a mistake of writing, not of value.
                    e @ EvalexprError::WrongOperatorArgumentAmount { .. } => {
                        AddressError::Syntax { expression, reason: e.to_string() }
                    }
                    e @ (EvalexprError::ExpectedInt { .. }
                    | EvalexprError::ExpectedFloat { .. }
                    | EvalexprError::ExpectedNumber { .. }
                    | EvalexprError::ExpectedNumberOrString { .. }
                    | EvalexprError::ExpectedBoolean { .. }
                    | EvalexprError::ExpectedString { .. }
                    | EvalexprError::ExpectedTuple { .. }
                    | EvalexprError::TypeError { .. }) => AddressError::Evaluation {
                        expression,
                        lane,
                        reason: format!("{e} (it must give a whole number)"),
                    },
                    e => AddressError::Evaluation { expression, lane, reason: e.to_string() },
                }
            })?;
        }
        Ok(values)
    }
}

/// `swizzle(B, M, S, offset)` in an expression: CuTe's `Swizzle<B, M, S>` applied to `offset`.
fn swizzle_function(arguments: &Value) -> Result<Value, EvalexprError> {
    let message = |why: String| EvalexprError::CustomMessage(format!("swizzle(B, M, S, offset): {why}"));
    let arguments = arguments.as_fixed_len_tuple(4).map_err(|_| message("it takes four whole numbers".into()))?;
    let mut numbers = [0u32; 4];
    for (number, argument) in numbers.iter_mut().zip(&arguments) {
        let value = argument.as_int().map_err(|_| message(format!("{argument} is not a whole number")))?;
        *number = u32::try_from(value).map_err(|_| message(format!("{value} is not between 0 and 2^32 - 1")))?;
    }
    let [bits, base, shift, offset] = numbers;
    let swizzle = CuteSwizzle::new(bits, base, shift).map_err(|e| message(e.to_string()))?;
    Ok(Value::from_int(swizzle.apply(offset).into()))
}

/// Lane `lane` accesses element `index` of an array of `width`-byte elements: byte address
/// `index * width`.
pub fn index_addresses(index: &str, width: Width) -> Result<LaneAddresses, AddressError> {
    let values = LaneExpression::parse(index)?.values()?;
    let mut lanes = [None; WARP_SIZE];
    for (lane, (&value, slot)) in values.iter().zip(&mut lanes).enumerate() {
        let bytes = u32::try_from(value).ok().and_then(|element| element.checked_mul(width.bytes()));
        *slot =
            Some(bytes.ok_or_else(|| AddressError::IndexOutOfRange { expression: index.to_owned(), lane, value })?);
    }
    Ok(lanes)
}

/// How a tile's rows are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    /// Column `c` of every row at column `c`.
    None,
    /// Column `c` of row `r` at column `c ^ (r mod columns)`, as in chapter 3's transpose.
    Xor,
    /// CuTe's `Swizzle<B, M, S>` applied to the element offset `r * pitch + c`.
    Cute(CuteSwizzle),
}

/// A row-major shared-memory tile `T tile[rows][columns + padding]`, possibly swizzled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    pub rows: u32,
    pub columns: u32,
    /// Unused elements at the end of every row.
    pub padding: u32,
    pub swizzle: Swizzle,
}

impl Tile {
    /// Elements from the start of one row to the start of the next.
    pub fn pitch(&self) -> u32 {
        self.columns + self.padding
    }

    /// The element index at which `(row, column)` is stored.
    pub fn element(&self, row: u32, column: u32) -> u32 {
        match self.swizzle {
            Swizzle::None => row * self.pitch() + column,
            Swizzle::Xor => row * self.pitch() + (column ^ (row % self.columns)),
            Swizzle::Cute(swizzle) => swizzle.apply(row * self.pitch() + column),
        }
    }

    /// Lane `lane` accesses element `(row, column)` of the tile, both expressions in `lane`.
    pub fn addresses(&self, row: &str, column: &str, width: Width) -> Result<LaneAddresses, AddressError> {
        let sides = 1..=MAX_TILE_SIDE;
        if !sides.contains(&self.rows) || !sides.contains(&self.columns) || self.padding > MAX_TILE_SIDE {
            return Err(AddressError::TileShape);
        }
        if self.swizzle == Swizzle::Xor && !self.columns.is_power_of_two() {
            return Err(AddressError::SwizzleColumns(self.columns));
        }
        let rows = LaneExpression::parse(row)?.values()?;
        let columns = LaneExpression::parse(column)?.values()?;
        let mut lanes = [None; WARP_SIZE];
        for lane in 0..WARP_SIZE {
            let (row_value, column_value) = (rows[lane], columns[lane]);
            let Some(r) = u32::try_from(row_value).ok().filter(|&r| r < self.rows) else {
                let last = self.rows - 1;
                return Err(AddressError::RowOutside { expression: row.to_owned(), lane, value: row_value, last });
            };
            let Some(c) = u32::try_from(column_value).ok().filter(|&c| c < self.columns) else {
                let (expression, value, last) = (column.to_owned(), column_value, self.columns - 1);
                return Err(AddressError::ColumnOutside { expression, lane, value, last });
            };
            let stored = self.element(r, c);
            let size = self.rows * self.pitch();
            if let Swizzle::Cute(swizzle) = self.swizzle
                && stored >= size
            {
                return Err(AddressError::SwizzleOutside { swizzle, row: r, column: c, stored, size });
            }
            // MAX_TILE_SIDE keeps this below 4096 * 8192 * 16 bytes: no overflow.
            lanes[lane] = Some(stored * width.bytes());
        }
        Ok(lanes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(lanes: LaneAddresses) -> Vec<u32> {
        lanes.iter().map(|a| a.expect("every lane active")).collect()
    }

    #[test]
    fn index_expressions_scale_by_the_width() {
        let lanes = index_addresses("lane * 33 + 1", Width::W2).unwrap();
        assert_eq!(bytes(lanes)[..3], [2, 68, 134]);
        let lanes = index_addresses("bitxor(lane, 7)", Width::W4).unwrap();
        assert_eq!(bytes(lanes)[..2], [28, 24]);
    }

    #[test]
    fn bad_expressions_say_what_and_where() {
        let error = index_addresses("(lane * 2", Width::W4).unwrap_err();
        assert!(matches!(&error, AddressError::Syntax { expression, .. } if expression == "(lane * 2"), "{error}");
        assert!(error.to_string().starts_with("`(lane * 2` is not an expression: "), "{error}");
        let error = index_addresses("lane *", Width::W4).unwrap_err();
        assert!(error.to_string().starts_with("`lane *` is not an expression: "), "{error}");
        assert!(!error.to_string().contains("whole number"), "{error}");
        let error = index_addresses("lane / 0", Width::W4).unwrap_err();
        assert!(error.to_string().starts_with("`lane / 0` at lane 0: "), "{error}");
        let error = index_addresses("lane - 1", Width::W4).unwrap_err();
        assert_eq!(
            error.to_string(),
            "`lane - 1` gives -1 at lane 0: element indices must be 0 or more and fit in 32 bits"
        );
        let error = index_addresses("row", Width::W4).unwrap_err();
        assert!(matches!(error, AddressError::Evaluation { lane: 0, .. }), "{error}");
        let error = index_addresses("lane * 1000000000", Width::W16).unwrap_err();
        assert!(matches!(error, AddressError::IndexOutOfRange { lane: 1, .. }), "{error}");
    }

    #[test]
    fn a_padded_column_is_a_strided_index() {
        let tile = Tile { rows: 32, columns: 32, padding: 1, swizzle: Swizzle::None };
        let column = tile.addresses("lane", "5", Width::W4).unwrap();
        assert_eq!(column, index_addresses("lane * 33 + 5", Width::W4).unwrap());
    }

    #[test]
    fn the_xor_swizzle_is_chapter_3s() {
        let tile = Tile { rows: 32, columns: 32, padding: 0, swizzle: Swizzle::Xor };
        let column = tile.addresses("lane", "3", Width::W4).unwrap();
        assert_eq!(column, index_addresses("lane * 32 + bitxor(3, lane)", Width::W4).unwrap());
        // Within a 16-column tile, row r's swizzle is r mod 16.
        let narrow = Tile { columns: 16, ..tile };
        assert_eq!(narrow.element(17, 0), 17 * 16 + 1);
    }

    #[test]
    fn cute_swizzles_in_tiles_and_in_expressions_agree() {
        // float tile[32][32] under Swizzle<3, 2, 3>, read as float4: lane l reads row l's vector 2.
        // Counted in float4 elements, the same layout is Swizzle<3, 0, 3> on a tile[32][8].
        let vectors =
            Tile { rows: 32, columns: 8, padding: 0, swizzle: Swizzle::Cute(CuteSwizzle::new(3, 0, 3).unwrap()) };
        let column = vectors.addresses("lane", "2", Width::W16).unwrap();
        assert_eq!(column, index_addresses("swizzle(3, 2, 3, lane * 32 + 8) / 4", Width::W16).unwrap());
        assert_eq!(column[5], Some((5 * 32 + 28) * 4), "row 5: vector 2 ^ 5 = 7");
        let tile = Tile { rows: 32, columns: 32, padding: 0, swizzle: Swizzle::None };
        let chapter_3 = Tile { swizzle: Swizzle::Xor, ..tile };
        let as_cute = Tile { swizzle: Swizzle::Cute(CuteSwizzle::new(5, 0, 5).unwrap()), ..tile };
        assert_eq!(chapter_3.addresses("lane", "3", Width::W4), as_cute.addresses("lane", "3", Width::W4));
    }

    #[test]
    fn bad_swizzles_say_why() {
        let error = index_addresses("swizzle(3, 2, 1, lane)", Width::W4).unwrap_err();
        assert_eq!(
            error.to_string(),
            "`swizzle(3, 2, 1, lane)` at lane 0: swizzle(B, M, S, offset): Swizzle<3, 2, 1>: the shift S must be at \
             least the number of bits B, or the bits XORed in would overlap the bits they change (CuTe requires |S| >= B)"
        );
        let error = index_addresses("swizzle(3, 2, lane)", Width::W4).unwrap_err();
        assert!(error.to_string().contains("swizzle(B, M, S, offset): it takes four whole numbers"), "{error}");
        let error = index_addresses("swizzle(3, 2, 3, lane - 1)", Width::W4).unwrap_err();
        assert!(error.to_string().contains("-1 is not between 0 and 2^32 - 1"), "{error}");
        // A row of 3 elements: Swizzle<1, 0, 1> sends offset 2 (bit 1 set) to 3, past the end.
        let odd = Tile { rows: 1, columns: 3, padding: 0, swizzle: Swizzle::Cute(CuteSwizzle::new(1, 0, 1).unwrap()) };
        let error = odd.addresses("0", "lane % 3", Width::W4).unwrap_err();
        assert!(matches!(error, AddressError::SwizzleOutside { row: 0, column: 2, stored: 3, size: 3, .. }), "{error}");
    }

    #[test]
    fn tiles_reject_what_they_cannot_hold() {
        let tile = Tile { rows: 32, columns: 32, padding: 0, swizzle: Swizzle::None };
        let error = tile.addresses("lane + 1", "0", Width::W4).unwrap_err();
        assert_eq!(error.to_string(), "row `lane + 1` gives 32 at lane 31: the tile's rows are 0 to 31");
        let error = tile.addresses("0", "lane - 2", Width::W4).unwrap_err();
        assert!(matches!(error, AddressError::ColumnOutside { lane: 0, value: -2, last: 31, .. }), "{error}");
        let swizzled = Tile { columns: 33, swizzle: Swizzle::Xor, ..tile };
        assert_eq!(swizzled.addresses("lane", "0", Width::W4), Err(AddressError::SwizzleColumns(33)));
        let empty = Tile { rows: 0, ..tile };
        assert_eq!(empty.addresses("lane", "0", Width::W4), Err(AddressError::TileShape));
        let largest = Tile { rows: MAX_TILE_SIDE, columns: MAX_TILE_SIDE, padding: MAX_TILE_SIDE, ..tile };
        let last_row = largest.addresses("4095", "lane + 4064", Width::W16).unwrap();
        assert_eq!(last_row[31], Some(((4095 * 8192) + 4095) * 16));
    }
}
