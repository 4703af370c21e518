# ---------------------------------------------------------------------------------------------
# vocabulary and greedy decoding (sequence tasks)


class Vocabulary:
    """A Tensorscope character vocabulary: `tokens[id]` is the text of token `id`; ids pad, bos,
    sep, eos (0 to 3) are the specials, every other token is one Unicode code point."""

    pad, bos, sep, eos = (wanted for _, wanted, _ in SPECIAL_TOKENS)

    def __init__(self, tokens):
        self.tokens = list(tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens) if i > self.eos}  # characters only

    def __len__(self):
        return len(self.tokens)


def load_vocabulary(directory=None):
    """The Vocabulary in `directory`/vocab.json (default: this file's directory). Raises
    FileNotFoundError when it is missing (an image classifier's export has none) and ValueError
    when it is not a valid Tensorscope vocabulary."""
    directory = directory or os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(directory, "vocab.json")
    v = _read_json(path, "exports of sequence tasks hold vocab.json; image classifiers have no vocabulary")
    if not isinstance(v, dict) or v.get("format") != VOCABULARY_FORMAT:
        raise ValueError("%s: not a Tensorscope vocabulary (format must be %r)" % (path, VOCABULARY_FORMAT))
    if v.get("version") != 1:
        raise ValueError("%s: unsupported version %r (this model.py reads version 1)" % (path, v.get("version")))
    tokens = v.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("%s: tokens must be a list of strings" % path)
    for key, wanted, text in SPECIAL_TOKENS:
        if v.get(key) != wanted or len(tokens) <= wanted or tokens[wanted] != text:
            raise ValueError("%s: %s must be id %d with token %r" % (path, key, wanted, text))
    for i, t in enumerate(tokens[len(SPECIAL_TOKENS):], len(SPECIAL_TOKENS)):
        if len(t) != 1:
            raise ValueError("%s: token %d is %r, not one character" % (path, i, t))
    if len(set(tokens)) != len(tokens):
        raise ValueError("%s: tokens must be distinct" % path)
    return Vocabulary(tokens)


def encode(vocab, text):
    """One id per code point of `text` (a list of ints). Raises ValueError naming the first
    character the vocabulary lacks and its code point, as Tensorscope's encode does."""
    ids = []
    for pos, c in enumerate(text):
        if c not in vocab.ids:
            code = "U+%04X" % ord(c)
            what = code if ord(c) < 0x20 or ord(c) == 0x7F else "'%s' (%s)" % (c, code)
            raise ValueError("cannot encode: character %s at character %d is not in the vocabulary" % (what, pos))
        ids.append(vocab.ids[c])
    return ids


def decode(vocab, ids):
    """The concatenated token texts of `ids`; specials appear as "<bos>" etc. Raises ValueError for
    an id outside the vocabulary."""
    out = []
    for i in ids:
        i = int(i)
        if not 0 <= i < len(vocab.tokens):
            raise ValueError("token id %d is outside the vocabulary [0, %d)" % (i, len(vocab.tokens)))
        out.append(vocab.tokens[i])
    return "".join(out)


def _greedy(net, prefix, stop, count):
    """Greedy decoding, as Tensorscope's exact match does: appends the argmax of the last
    position's logits to the token list `prefix` until `stop` (not appended), `count` new tokens or
    the model's seq_len; returns the new tokens. A model with a multilinear layer (fixed N) is fed
    the prefix right-padded with PAD to seq_len."""
    if net.classifier:
        raise ValueError("an image classifier has no vocabulary to decode")
    if not prefix or len(prefix) > net.seq_len:
        raise ValueError("the prompt has %d tokens; the model takes 1 to %d" % (len(prefix), net.seq_len))
    fixed = any(isinstance(b.attn, Multilinear) for b in net.blocks)
    device = next(net.parameters()).device
    seq, new = list(prefix), []
    with torch.no_grad():
        while len(new) < count:
            x = seq + [0] * (net.seq_len - len(seq)) if fixed else seq
            logits = net(torch.tensor([x], dtype=torch.int64, device=device))
            token = int(logits[0, len(seq) - 1].argmax())
            if token == stop:
                break
            new.append(token)
            if len(seq) == net.seq_len:
                break
            seq.append(token)
    return new


def answer(net, vocab, question, max_new_tokens=None):
    """The model's answer to `question` (question-answer tasks): greedy decoding of
    [BOS] question [SEP] until [EOS], `max_new_tokens` tokens (default: as many as seq_len allows)
    or seq_len, decoded without the EOS. Raises ValueError for a character outside the vocabulary."""
    prompt = [vocab.bos] + encode(vocab, question) + [vocab.sep]
    count = max_new_tokens if max_new_tokens is not None else net.seq_len
    return decode(vocab, _greedy(net, prompt, vocab.eos, count))


def generate(net, vocab, prompt, n):
    """char_lm: the greedy continuation of `prompt` (`n` characters at most, fewer when the
    context of seq_len tokens is full)."""
    return decode(vocab, _greedy(net, encode(vocab, prompt), None, n))
