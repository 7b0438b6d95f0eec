"""Labeling configs for the control tags and forms no shipped template uses, so the
yardstick covers them too: ellipses, bitmasks, vectors, the magic wand, Number, DateTime,
time-series instants on inline data, and relations between image regions.

Written after the examples of Label Studio's tag reference (labelstud.io/tags) and the
docstrings of its editor's control tags (``web/libs/editor/src/tags/control``).
"""
from __future__ import annotations

__all__ = ["EXTRA_CONFIGS"]

EXTRA_CONFIGS: dict[str, str] = {
    "extra/ellipses": """
<View>
  <Image name="image" value="$image"/>
  <EllipseLabels name="ellipse" toName="image">
    <Label value="Cell"/><Label value="Nucleus"/>
  </EllipseLabels>
</View>""",
    "extra/bitmasks": """
<View>
  <Image name="image" value="$image"/>
  <BitmaskLabels name="bitmask" toName="image">
    <Label value="Road"/><Label value="Building"/>
  </BitmaskLabels>
</View>""",
    "extra/vectors": """
<View>
  <Image name="image" value="$image"/>
  <VectorLabels name="vector" toName="image">
    <Label value="Lane"/><Label value="Curb"/>
  </VectorLabels>
</View>""",
    "extra/magic-wand": """
<View>
  <BrushLabels name="tag" toName="image">
    <Label value="Cloud"/><Label value="Shadow"/>
  </BrushLabels>
  <MagicWand name="magicwand" toName="image"/>
  <Image name="image" value="$image" crossOrigin="anonymous"/>
</View>""",
    "extra/number-datetime": """
<View>
  <Text name="text" value="$text"/>
  <Number name="count" toName="text" min="0" max="50"/>
  <DateTime name="day" toName="text" only="date"/>
  <DateTime name="moment" toName="text"/>
</View>""",
    "extra/time-series-instants": """
<View>
  <TimeSeriesLabels name="events" toName="ts">
    <Label value="Change"/><Label value="Burst"/><Label value="Drift"/>
  </TimeSeriesLabels>
  <TimeSeries name="ts" value="$ts" valueType="json" timeColumn="time">
    <Channel column="value"/>
  </TimeSeries>
  <Rating name="severity" toName="ts" perRegion="true" maxRating="5"/>
</View>""",
    "extra/relations-on-image": """
<View>
  <Relations>
    <Relation value="holds"/><Relation value="next to"/>
  </Relations>
  <Image name="image" value="$image"/>
  <RectangleLabels name="objects" toName="image">
    <Label value="Person"/><Label value="Cup"/><Label value="Table"/>
  </RectangleLabels>
  <Choices name="state" toName="image" perRegion="true">
    <Choice value="Visible"/><Choice value="Occluded"/>
  </Choices>
</View>""",
}
