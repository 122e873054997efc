"""The protocol's constants come from salus_client.codes, which the Go tests generate
from the protocol package (and fail on when it is stale)."""

import unittest

from salus_client import codes, protocol


class CodesTest(unittest.TestCase):
    def test_protocol_uses_generated_constants(self):
        self.assertEqual(protocol.VERSION, codes.VERSION)
        self.assertEqual((protocol.MIN_FRAME, protocol.MAX_FRAME), (codes.MIN_FRAME, codes.MAX_FRAME))

    def test_every_code_named_and_described(self):
        named = {v for k, v in vars(codes).items() if k.isupper() and isinstance(v, str)}
        self.assertEqual(named, set(codes.CODES))
        self.assertTrue(codes.ENDS_SESSION <= set(codes.CODES))
        for code, meaning in codes.CODES.items():
            self.assertEqual(getattr(codes, code.upper()), code)
            self.assertTrue(meaning)


if __name__ == "__main__":
    unittest.main()
