#!/usr/bin/python3
"""Independent reader of TensorBoard event files, written from the specifications alone:

  TFRecord framing: per record a uint64 little-endian length, the masked CRC-32C of those 8
  bytes (uint32 LE), the data, the masked CRC-32C of the data (uint32 LE);
  masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 mod 2**32. CRC-32C is the Castagnoli CRC
  (reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF).

  Protocol-buffer wire format (a key varint = field << 3 | wire type; wire types 0 varint,
  1 fixed64, 2 length-delimited, 5 fixed32) of tensorboard.Event (event.proto, summary.proto):
    Event        wall_time 1 double, step 2 int64, file_version 3 string, summary 5 Summary,
                 session_log 7 SessionLog
    Summary      value 1 repeated Value
    Value        tag 1 string, simple_value 2 float, image 4 Image
    Image        height 1, width 2, colorspace 3 (int32), encoded_image_string 4 bytes
    SessionLog   status 1 enum (START = 1)

Usage:
  read_tfevents.py events FILE...   every event of the files, as JSON; exit 1 when a CRC does not
                                    match or a message breaks the format (an incomplete last
                                    record, as a killed writer leaves, is reported, not an error)
  read_tfevents.py run DIR          the event files directly in DIR, in name order, read as
                                    TensorBoard does after a restart: a SessionLog START after
                                    the first drops every value read before it at a step >= its
                                    step. Prints {"files", "starts", "scalars": {tag: [[step,
                                    value], ...]}, "images": {tag: [[step, height, width,
                                    colorspace, png_bytes, png_sha256, the PNG's own height
                                    and width]]}} as JSON.
  read_tfevents.py crc TEXT         the CRC-32C of TEXT's UTF-8 bytes, in hex

ctest runs it from tests/test_tensorboard.cpp. Uses the Python standard library only.
"""
import hashlib
import json
import os
import struct
import sys


class FormatError(Exception):
    pass


def crc32c(data):
    """Bit by bit, straight from the polynomial (no table)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def records(blob, where):
    """The data of every whole record; (records, note about an incomplete tail or None)."""
    out, pos = [], 0
    while pos < len(blob):
        if len(blob) - pos < 12:
            return out, f"{where}: incomplete record header at byte {pos}"
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if masked(crc32c(header)) != length_crc:
            raise FormatError(f"{where}: CRC MISMATCH of the length at byte {pos}")
        if len(blob) - pos - 12 < length + 4:
            return out, f"{where}: incomplete record at byte {pos}"
        data = blob[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
        if masked(crc32c(data)) != data_crc:
            raise FormatError(f"{where}: CRC MISMATCH of the data of the record at byte {pos}")
        out.append(data)
        pos += 16 + length
    return out, None


def varint(buf, pos, where):
    shift, value = 0, 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise FormatError(f"{where}: truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def fields(buf, where):
    """[(field number, wire type, value)]: ints for varints, bytes for the others."""
    out, pos = [], 0
    while pos < len(buf):
        key, pos = varint(buf, pos, where)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos, where)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        elif wire == 2:
            n, pos = varint(buf, pos, where)
            value, pos = buf[pos:pos + n], pos + n
        else:
            raise FormatError(f"{where}: wire type {wire} of field {number}")
        if pos > len(buf):
            raise FormatError(f"{where}: field {number} runs past the message's end")
        out.append((number, wire, value))
    return out


def expect_wire(where, number, wire, want):
    if wire != want:
        raise FormatError(f"{where}: field {number} has wire type {wire}, expected {want}")


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def decode_image(buf, where):
    img = {"height": 0, "width": 0, "colorspace": 0, "png": b""}
    names = {1: ("height", 0), 2: ("width", 0), 3: ("colorspace", 0), 4: ("png", 2)}
    for number, wire, value in fields(buf, where):
        if number not in names:
            raise FormatError(f"{where}: unexpected Image field {number}")
        name, want = names[number]
        expect_wire(where, number, wire, want)
        img[name] = signed64(value) if want == 0 else value
    return img


def decode_value(buf, where):
    value = {}
    for number, wire, v in fields(buf, where):
        if number == 1:
            expect_wire(where, number, wire, 2)
            value["tag"] = v.decode("utf-8")
        elif number == 2:
            expect_wire(where, number, wire, 5)
            value["simple_value"] = struct.unpack("<f", v)[0]
        elif number == 4:
            expect_wire(where, number, wire, 2)
            value["image"] = decode_image(v, where + " image")
        else:
            raise FormatError(f"{where}: unexpected Summary.Value field {number}")
    if "tag" not in value:
        raise FormatError(f"{where}: a Summary.Value without a tag")
    return value


def decode_event(buf, where):
    event = {"wall_time": 0.0, "step": 0}
    for number, wire, v in fields(buf, where):
        if number == 1:
            expect_wire(where, number, wire, 1)
            event["wall_time"] = struct.unpack("<d", v)[0]
        elif number == 2:
            expect_wire(where, number, wire, 0)
            event["step"] = signed64(v)
        elif number == 3:
            expect_wire(where, number, wire, 2)
            event["file_version"] = v.decode("utf-8")
        elif number == 5:
            expect_wire(where, number, wire, 2)
            event["summary"] = [decode_value(f, where + " value")
                                for n, w, f in fields(v, where + " summary") if n == 1 and w == 2]
        elif number == 7:
            expect_wire(where, number, wire, 2)
            status = [s for n, w, s in fields(v, where + " session_log") if n == 1 and w == 0]
            event["session_status"] = status[-1] if status else 0
        else:
            raise FormatError(f"{where}: unexpected Event field {number}")
    return event


def read_file(path):
    """(events, note): the decoded events of one file, the first checked to be the version."""
    with open(path, "rb") as f:
        blob = f.read()
    datas, note = records(blob, path)
    events = [decode_event(d, f"{path} record {i}") for i, d in enumerate(datas)]
    if not events or events[0].get("file_version") != "brain.Event:2":
        raise FormatError(f"{path}: the first event is not file_version 'brain.Event:2'")
    return events, note


def jsonable(event):
    """The event with each image's PNG bytes replaced by their count and SHA-256."""
    e = dict(event)
    if "summary" in e:
        values = []
        for v in e["summary"]:
            v = dict(v)
            if "image" in v:
                img = dict(v["image"])
                png = img.pop("png")
                img["png_bytes"] = len(png)
                img["png_sha256"] = hashlib.sha256(png).hexdigest()
                v["image"] = img
            values.append(v)
        e["summary"] = values
    return e


def png_size(png):
    """(height, width) from the PNG's IHDR chunk (after the 8-byte signature); (0, 0) if none."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        return 0, 0
    width, height = struct.unpack(">II", png[16:24])
    return height, width


def read_run(folder):
    files = sorted(os.path.join(folder, n) for n in os.listdir(folder) if "tfevents" in n)
    scalars, images, starts, notes = {}, {}, [], []
    seen_start = False
    for path in files:
        events, note = read_file(path)
        if note:
            notes.append(note)
        for e in events:
            if e.get("session_status") == 1:
                starts.append([os.path.basename(path), e["step"]])
                if seen_start:  # a restart: what was read at its step and later is dropped
                    for series in list(scalars.values()) + list(images.values()):
                        series[:] = [p for p in series if p[0] < e["step"]]
                seen_start = True
            for v in e.get("summary", []):
                if "simple_value" in v:
                    scalars.setdefault(v["tag"], []).append([e["step"], v["simple_value"]])
                if "image" in v:
                    height, width = png_size(v["image"]["png"])
                    i = jsonable({"summary": [v]})["summary"][0]["image"]
                    images.setdefault(v["tag"], []).append(
                        [e["step"], i["height"], i["width"], i["colorspace"], i["png_bytes"],
                         i["png_sha256"], height, width])
    return {"files": [os.path.basename(f) for f in files], "starts": starts,
            "scalars": scalars, "images": images, "notes": notes}


def main(argv):
    if len(argv) >= 3 and argv[1] == "events":
        out = []
        for path in argv[2:]:
            events, note = read_file(path)
            out.append({"file": path, "events": [jsonable(e) for e in events], "note": note})
        print(json.dumps(out))
    elif len(argv) == 3 and argv[1] == "run":
        print(json.dumps(read_run(argv[2])))
    elif len(argv) == 3 and argv[1] == "crc":
        print(f"{crc32c(argv[2].encode('utf-8')):08x}")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except FormatError as e:
        print(f"VIOLATION {e}")
        sys.exit(1)
