"""What a consumer of a rosidl message sees of it, for comparing two messages field by field."""


def field_types(msg):
    """Type (and array kind) of every field, nested messages walked (the first element of a
    sequence of messages too), and their ``_check_fields``."""
    out = {"_check_fields": getattr(msg, "_check_fields", None)}
    for name in msg.get_fields_and_field_types():
        value = getattr(msg, name)
        if isinstance(value, list) and value and hasattr(value[0], "get_fields_and_field_types"):
            value = value[0]
        if hasattr(value, "get_fields_and_field_types"):
            out.update({f"{name}.{k}": v for k, v in field_types(value).items()})
        else:
            out[name] = (type(value), getattr(value, "typecode", None),
                         getattr(value, "dtype", None), getattr(value, "shape", None))
    return out
