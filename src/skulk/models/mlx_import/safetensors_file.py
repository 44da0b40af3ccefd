"""Write numpy arrays as one safetensors file, streaming each array's bytes straight out.

Going through `mx.save_safetensors` would first copy every array into MLX; for a 538 MB
float32 model that copy cost more than the write itself.
"""

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt

# numpy dtype → safetensors dtype name (little-endian throughout).
_DTYPES = {
    "float64": "F64", "float32": "F32", "float16": "F16",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8",
    "uint64": "U64", "uint32": "U32", "uint16": "U16", "uint8": "U8", "bool": "BOOL",
}


def write_safetensors(path: Path, tensors: dict[str, npt.NDArray[np.generic]],
                      metadata: dict[str, str] | None = None) -> None:
    """Write `tensors` in the safetensors layout: header length, JSON header, raw data."""
    header: dict[str, object] = {"__metadata__": metadata} if metadata else {}
    arrays = []
    offset = 0
    for name, array in tensors.items():
        dtype = _DTYPES.get(array.dtype.name)
        if dtype is None:
            raise ValueError(f"tensor {name} has dtype {array.dtype}, which safetensors lacks")
        contiguous = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"),
                                                        copy=False)
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + contiguous.nbytes]}
        offset += contiguous.nbytes
        arrays.append(contiguous)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # keeps the data 8-byte aligned
    with path.open("wb") as stream:
        stream.write(len(encoded).to_bytes(8, "little"))
        stream.write(encoded)
        for array in arrays:
            stream.write(array.reshape(-1).view(np.uint8).data)
