//! The book's bank playground: one question in JSON (load or store, width, and a lane index
//! expression or a tile access), one answer in JSON (the model's wavefronts, verdict, passes,
//! every bank and every lane). Compiled to WebAssembly, it is the only logic the playground has:
//! the page's script sends the reader's input here and draws what comes back.
//!
//! The page talks to it through [`wasm`]'s C functions, passing UTF-8 JSON through linear memory.

use bank_model::swizzle::Swizzle as CuteSwizzle;
use bank_model::{
    Analysis, Op, Request, WARP_SIZE, Width,
    describe::{lane_ranges, summary},
};
use lane_addresses::{LaneAddresses, Swizzle, Tile};
use serde::{Deserialize, Serialize};

pub mod wasm;

/// What the reader asks about: one warp-wide shared-memory instruction.
#[derive(Debug, Deserialize)]
pub struct Question {
    /// `ld` or `st`.
    pub op: String,
    /// Bytes per lane.
    pub width: u32,
    #[serde(flatten)]
    pub lanes: Lanes,
}

/// How the lanes' addresses are given.
#[derive(Debug, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Lanes {
    /// Each lane's element index, an expression in `lane`.
    Index { index: String },
    /// Each lane reads element (`row`, `column`) of `tile`, both expressions in `lane`.
    Tile { tile: TileForm, row: String, column: String },
}

/// The tile's fields as the reader typed them.
#[derive(Debug, Deserialize)]
pub struct TileForm {
    pub rows: String,
    pub columns: String,
    pub padding: String,
    /// `none`, `xor` or `cute`.
    pub swizzle: String,
    /// CuTe's `B, M, S`, read when `swizzle` is `cute`.
    #[serde(default)]
    pub cute: String,
}

impl TileForm {
    fn tile(&self) -> Result<Tile, String> {
        let whole = |name: &str, text: &str| {
            text.trim().parse::<u32>().map_err(|_| format!("{name} `{text}` is not a whole number (0 or more)"))
        };
        Ok(Tile {
            rows: whole("rows", &self.rows)?,
            columns: whole("columns", &self.columns)?,
            padding: whole("padding", &self.padding)?,
            swizzle: self.swizzle()?,
        })
    }

    fn swizzle(&self) -> Result<Swizzle, String> {
        match self.swizzle.as_str() {
            "none" => Ok(Swizzle::None),
            "xor" => Ok(Swizzle::Xor),
            "cute" => {
                let numbers: Vec<u32> =
                    self.cute.split(',').map(|n| n.trim().parse()).collect::<Result<_, _>>().map_err(|_| {
                        format!("B, M, S `{}` must be three whole numbers separated by commas, e.g. 3, 0, 3", self.cute)
                    })?;
                let [bits, base, shift] = numbers[..] else {
                    return Err(format!("B, M, S `{}` must be three numbers, e.g. 3, 0, 3", self.cute));
                };
                CuteSwizzle::new(bits, base, shift).map(Swizzle::Cute).map_err(|e| e.to_string())
            }
            other => Err(format!("unknown swizzle `{other}`: none, xor or cute")),
        }
    }
}

impl Question {
    /// The instruction, or why the input does not describe one.
    pub fn request(&self) -> Result<Request, String> {
        let op: Op = self.op.parse().map_err(|e| format!("{e}"))?;
        let width = Width::try_from(self.width).map_err(|e| format!("{e}"))?;
        let lanes: LaneAddresses = match &self.lanes {
            Lanes::Index { index } => lane_addresses::index_addresses(index, width),
            Lanes::Tile { tile, row, column } => tile.tile()?.addresses(row, column, width),
        }
        .map_err(|e| e.to_string())?;
        Request::new(op, width, op.address_lanes(lanes)).map_err(|e| e.to_string())
    }
}

/// The playground's reply: an answer, or the error to show under the input.
#[derive(Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reply {
    Answer(Answer),
    Error(String),
}

/// The model's answer, shaped for drawing.
#[derive(Debug, Serialize)]
pub struct Answer {
    /// The one-line verdict the terminal grids print too.
    pub summary: String,
    pub wavefronts: u32,
    pub ideal: u32,
    pub excess: u32,
    pub conflict_degree: u32,
    pub passes: Vec<PassView>,
    /// Banks 0 to 31.
    pub banks: Vec<BankView>,
    /// Lanes 0 to 31.
    pub lanes: Vec<LaneView>,
}

#[derive(Debug, Serialize)]
pub struct PassView {
    pub lanes: String,
    pub wavefronts: u32,
}

#[derive(Debug, Serialize)]
pub struct BankView {
    pub bank: u32,
    /// Distinct words the bank serves.
    pub words: Vec<u32>,
    pub lanes: Vec<usize>,
    /// `lanes` as compact ranges, `0-3,8`.
    pub lane_ranges: String,
    /// The most distinct words in one pass.
    pub most_words_in_one_pass: u32,
    /// More than one word in a pass: this bank costs extra wavefronts.
    pub conflict: bool,
    /// More lanes than words: some lanes get their word by broadcast (loads) or merged (stores).
    pub shared: bool,
}

#[derive(Debug, Serialize)]
pub struct LaneView {
    pub lane: usize,
    pub address: Option<u32>,
    /// The banks of the words the lane touches (several for 8- and 16-byte accesses).
    pub banks: Vec<u32>,
    /// Another active lane touches one of its words too (every lane of a shared word, the
    /// first as well as the others).
    pub shared: bool,
}

impl Answer {
    fn new(request: &Request, analysis: &Analysis) -> Answer {
        let banks = analysis
            .bank_uses()
            .map(|bank| BankView {
                bank: bank.bank,
                shared: bank.lanes.len() as usize > bank.words.len(),
                lanes: bank.lanes.iter().collect(),
                lane_ranges: lane_ranges(bank.lanes),
                most_words_in_one_pass: bank.most_words_in_one_pass,
                conflict: bank.most_words_in_one_pass > 1,
                words: bank.words,
            })
            .collect();
        let words_of = |lane: usize| request.lanes[lane].into_iter().flat_map(|a| request.width.words(a));
        let mut lanes_of_word = std::collections::HashMap::<u32, u32>::new();
        for lane in 0..WARP_SIZE {
            let mut words: Vec<u32> = words_of(lane).collect();
            words.dedup();
            words.into_iter().for_each(|word| *lanes_of_word.entry(word).or_default() += 1);
        }
        let lanes = (0..WARP_SIZE)
            .map(|lane| {
                let address = request.lanes[lane];
                let banks =
                    address.map_or(Vec::new(), |a| request.width.words(a).map(|w| w % bank_model::BANKS).collect());
                let shared = words_of(lane).any(|word| lanes_of_word[&word] > 1);
                LaneView { lane, address, banks, shared }
            })
            .collect();
        Answer {
            summary: summary(request, analysis),
            wavefronts: analysis.wavefronts,
            ideal: analysis.ideal,
            excess: analysis.excess,
            conflict_degree: analysis.conflict_degree(),
            passes: analysis
                .passes
                .iter()
                .map(|p| PassView { lanes: lane_ranges(p.lanes), wavefronts: p.wavefronts })
                .collect(),
            banks,
            lanes,
        }
    }
}

/// Answers one question given as JSON; never fails, a bad question gets an error reply.
pub fn reply(question: &str) -> Reply {
    let question: Question = match serde_json::from_str(question) {
        Ok(question) => question,
        Err(e) => return Reply::Error(format!("the playground sent a question the model cannot read: {e}")),
    };
    match question.request() {
        Ok(request) => Reply::Answer(Answer::new(&request, &request.analyze())),
        Err(why) => Reply::Error(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(question: &str) -> Answer {
        match reply(question) {
            Reply::Answer(answer) => answer,
            Reply::Error(why) => panic!("{question}: {why}"),
        }
    }

    fn error(question: &str) -> String {
        match reply(question) {
            Reply::Error(why) => why,
            Reply::Answer(answer) => panic!("{question} was answered: {}", answer.summary),
        }
    }

    #[test]
    fn an_index_expression_gives_the_models_answer() {
        let stride_2 = answer(r#"{"op":"ld","width":4,"mode":"index","index":"lane * 2"}"#);
        assert_eq!((stride_2.wavefronts, stride_2.ideal, stride_2.excess, stride_2.conflict_degree), (2, 1, 1, 2));
        assert_eq!(stride_2.summary, "ld 4-byte: 2 wavefronts (ideal 1): 2-way bank conflict, 1 wavefront in excess");
        assert_eq!(stride_2.banks.len(), 32);
        assert_eq!(stride_2.banks[2].lanes, [1, 17]);
        assert_eq!(stride_2.banks[2].words, [2, 34]);
        assert!(stride_2.banks[2].conflict);
        assert!(stride_2.banks[1].lanes.is_empty());
        assert_eq!(stride_2.lanes[17].banks, [2]);
        assert_eq!(stride_2.lanes[17].address, Some(136));
    }

    #[test]
    fn broadcasts_and_wide_lanes_are_marked() {
        let broadcast = answer(r#"{"op":"ld","width":4,"mode":"index","index":"lane / 4"}"#);
        assert_eq!(broadcast.wavefronts, 1);
        assert!(broadcast.banks[..8].iter().all(|b| b.shared && !b.conflict && b.lanes.len() == 4));
        assert!(
            broadcast.lanes.iter().all(|lane| lane.shared),
            "every lane of a shared word is outlined, the first too"
        );
        let wide = answer(r#"{"op":"st","width":16,"mode":"index","index":"lane"}"#);
        assert_eq!(wide.lanes[1].banks, [4, 5, 6, 7]);
        assert_eq!(wide.passes.iter().map(|p| p.lanes.as_str()).collect::<Vec<_>>(), ["0-7", "8-15", "16-23", "24-31"]);
    }

    #[test]
    fn a_tile_column_with_padding_and_with_a_swizzle() {
        let column = |padding: u32, swizzle: &str| {
            answer(&format!(
                r#"{{"op":"ld","width":4,"mode":"tile","tile":{{"rows":"32","columns":"32","padding":"{padding}","swizzle":"{swizzle}"}},"row":"lane","column":"3"}}"#
            ))
            .wavefronts
        };
        assert_eq!(column(0, "none"), 32);
        assert_eq!(column(1, "none"), 1);
        assert_eq!(column(2, "none"), 2);
        assert_eq!(column(0, "xor"), 1);
    }

    #[test]
    fn a_cute_swizzle_keeps_a_float4_column_conflict_free() {
        // float tile[32][32] read as float4 columns: a tile[32][8] of 16-byte elements.
        let column = |swizzle: &str, cute: &str| {
            answer(&format!(
                r#"{{"op":"ld","width":16,"mode":"tile","tile":{{"rows":"32","columns":"8","padding":"0","swizzle":"{swizzle}","cute":"{cute}"}},"row":"lane","column":"2"}}"#
            ))
            .wavefronts
        };
        assert_eq!(column("none", ""), 32);
        assert_eq!(column("cute", "3, 0, 3"), 4);
        assert_eq!(column("cute", "2,0,3"), 8);
        let cute = |text: &str| {
            error(&format!(
                r#"{{"op":"ld","width":4,"mode":"tile","tile":{{"rows":"32","columns":"32","padding":"0","swizzle":"cute","cute":"{text}"}},"row":"lane","column":"0"}}"#
            ))
        };
        assert_eq!(cute("3, x, 3"), "B, M, S `3, x, 3` must be three whole numbers separated by commas, e.g. 3, 0, 3");
        assert_eq!(cute("3, 0"), "B, M, S `3, 0` must be three numbers, e.g. 3, 0, 3");
        assert!(cute("3, 0, 1").contains("the shift S must be at least the number of bits B"));
    }

    #[test]
    fn bad_input_is_an_error_to_show() {
        assert!(
            error(r#"{"op":"ld","width":4,"mode":"index","index":"(lane"}"#)
                .starts_with("`(lane` is not an expression")
        );
        assert!(error(r#"{"op":"ld","width":3,"mode":"index","index":"lane"}"#).starts_with("width 3 bytes"));
        assert!(error(r#"{"op":"lds","width":4,"mode":"index","index":"lane"}"#).starts_with("unknown op `lds`"));
        let tile = r#"{"op":"ld","width":4,"mode":"tile","row":"lane","column":"0","tile":"#;
        let padding = error(&format!(r#"{tile}{{"rows":"32","columns":"32","padding":"","swizzle":"none"}}}}"#));
        assert_eq!(padding, "padding `` is not a whole number (0 or more)");
        let rows = error(&format!(r#"{tile}{{"rows":"-1","columns":"32","padding":"0","swizzle":"xor"}}}}"#));
        assert_eq!(rows, "rows `-1` is not a whole number (0 or more)");
        assert!(error("not json").starts_with("the playground sent a question the model cannot read"));
        let json = serde_json::to_string(&reply(r#"{"op":"ld","width":4,"mode":"index","index":"lane -"}"#)).unwrap();
        assert!(json.starts_with(r#"{"error":"`lane -` is not an expression"#), "{json}");
        assert!(!json.contains("whole number"), "a mistake of writing is not one of value: {json}");
    }
}
