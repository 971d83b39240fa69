-- Small media samples shared by the conformance fixtures (base64).
return {
  -- a 1x1 red pixel PNG
  png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC",
  -- 8 silent samples of 16-bit mono PCM at 8 kHz
  wav = "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA",
}
