"""The base of dialect wire types: unknown fields are ignored, as the original servers do,
so clients that send newer fields never break."""

from pydantic import BaseModel, ConfigDict


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")
