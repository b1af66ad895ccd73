# a datetime whose tzinfo is a ZoneInfo subclass (overriding utcoffset) is accepted by compact and comes back as a plain ZoneInfo: the thawed value is not equal to the original (silently wrong data)
import bale, datetime, zoneinfo
class Z(zoneinfo.ZoneInfo):
    def utcoffset(self, dt): return datetime.timedelta(hours=5)
d = datetime.datetime(2020, 1, 1, 12, tzinfo=Z("UTC"))
r = bale.compact([d])
t = bale.thaw(r.root)[0]
print(repr(d), d.utcoffset(), "->", repr(t), t.utcoffset())
assert t == d, (t, d)
