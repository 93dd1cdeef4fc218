"""Small text helpers shared by the feature scripts."""
import json
import re
import time

import litellm

AUTHORS = ("EAP", "HPL", "MWS")
_WORD = re.compile(r"[A-Za-z']+")


def tokens(sentence):
    return _WORD.findall(sentence.lower())


def punctuation_profile(sentence):
    return {p: sentence.count(p) for p in ",;:?!'\""}


def style_votes(sentence, model="mistral/mistral-small-latest", retries=3):
    """Second opinion on the author of one sentence: {author: probability}, uniform on failure."""
    prompt = ("Which of these writers wrote the sentence below: Edgar Allan Poe (EAP), "
              "H.P. Lovecraft (HPL) or Mary Shelley (MWS)? Answer with a JSON object mapping "
              "EAP, HPL and MWS to probabilities.\n\n" + sentence)
    for attempt in range(retries):
        try:
            reply = litellm.completion(model=model, messages=[{"role": "user", "content": prompt}],
                                       temperature=0, max_tokens=40)
            probs = json.loads(reply.choices[0].message.content)
            total = sum(float(probs.get(a, 0.0)) for a in AUTHORS) or 1.0
            return {a: float(probs.get(a, 0.0)) / total for a in AUTHORS}
        except Exception:
            time.sleep(1.5 * (attempt + 1))
    return {a: 1.0 / len(AUTHORS) for a in AUTHORS}
