import re

from server import keys


def test_new_keys_have_the_prefix_enough_randomness_and_a_valid_checksum() -> None:
    values = {keys.new_key() for _ in range(200)}
    assert len(values) == 200
    for value in values:
        assert re.fullmatch(r"cdk_[0-9A-Za-z]{38}", value)
        assert keys.is_well_formed(value)
    # 32 base62 characters carry 32 * log2(62) = 190 bits, above the contract's 160.
    assert 32 * 5.95 > 160


def test_any_single_character_change_fails_the_checksum() -> None:
    value = keys.new_key()
    for position in range(len(keys.PREFIX), len(value)):
        for replacement in "0aZ":
            changed = value[:position] + replacement + value[position + 1 :]
            if changed != value:
                assert not keys.is_well_formed(changed), changed


def test_malformed_values_are_refused_without_lookup() -> None:
    for value in ["", "cdk_", "not-a-key", "CDK_" + "a" * 38, keys.new_key() + "x", " " * 42]:
        assert not keys.is_well_formed(value)


def test_hash_depends_on_the_secret_and_is_hex() -> None:
    value = keys.new_key()
    one, other = keys.key_hash(value, b"a"), keys.key_hash(value, b"b")
    assert one != other and re.fullmatch(r"[0-9a-f]{64}", one)
    assert value not in one


def test_mask_keeps_prefix_and_last_four() -> None:
    value = "cdk_" + "A" * 34 + "wxyz"
    assert keys.mask(value) == "cdk_…wxyz"
