"""The vocabulary: lessons, their scopes and associations, decisions, proposals, mutations.

Everything that crosses a boundary between rooms (store, specialists, orchestrator,
recall) is one of these models. Each rule has its module:

| module | what it holds |
|---|---|
| `limits.py` | SPEC §5's limits, counted in UTF-8 bytes (`TITLE_MAX_BYTES`, …) |
| `fields.py` | the checked texts: title, recommendation, reason, ID, root-relative path |
| `associations.py` | files, folders, identifiers, keyword groups, commands; what is too broad |
| `scopes.py` | repository and graph scopes |
| `citations.py` | citations, their fingerprints, and a lesson's evidence |
| `cards.py` | the card, the stored lesson, its tombstone |
| `decisions.py` | the specialists' decisions and proposals |
| `mutations.py` | what a publish applies, its author, history rows and receipt |

The names below are the public API; import them from `active_memory.lessons`.
"""

from active_memory.lessons.associations import BROAD_PROGRAMS as BROAD_PROGRAMS
from active_memory.lessons.associations import BROAD_WORDS as BROAD_WORDS
from active_memory.lessons.associations import Associations as Associations
from active_memory.lessons.associations import CommandFamily as CommandFamily
from active_memory.lessons.associations import Identifier as Identifier
from active_memory.lessons.associations import KeywordGroup as KeywordGroup
from active_memory.lessons.cards import Card as Card
from active_memory.lessons.cards import Lesson as Lesson
from active_memory.lessons.cards import Status as Status
from active_memory.lessons.cards import StatusWithRetired as StatusWithRetired
from active_memory.lessons.cards import Tombstone as Tombstone
from active_memory.lessons.citations import Citation as Citation
from active_memory.lessons.citations import Evidence as Evidence
from active_memory.lessons.citations import counted_citations as counted_citations
from active_memory.lessons.decisions import Action as Action
from active_memory.lessons.decisions import Decision as Decision
from active_memory.lessons.decisions import Proposal as Proposal
from active_memory.lessons.fields import GraphHash as GraphHash
from active_memory.lessons.fields import LessonId as LessonId
from active_memory.lessons.fields import Namespace as Namespace
from active_memory.lessons.fields import Reason as Reason
from active_memory.lessons.fields import Recommendation as Recommendation
from active_memory.lessons.fields import RootPath as RootPath
from active_memory.lessons.fields import Title as Title
from active_memory.lessons.limits import ASSOCIATIONS_MAX_PER_KIND as ASSOCIATIONS_MAX_PER_KIND
from active_memory.lessons.limits import COMMAND_MAX_BYTES as COMMAND_MAX_BYTES
from active_memory.lessons.limits import IDENTIFIER_MAX_BYTES as IDENTIFIER_MAX_BYTES
from active_memory.lessons.limits import KEYWORD_GROUP_MAX_TERMS as KEYWORD_GROUP_MAX_TERMS
from active_memory.lessons.limits import KEYWORD_GROUP_MIN_TERMS as KEYWORD_GROUP_MIN_TERMS
from active_memory.lessons.limits import PATH_MAX_BYTES as PATH_MAX_BYTES
from active_memory.lessons.limits import REASON_MAX_BYTES as REASON_MAX_BYTES
from active_memory.lessons.limits import RECOMMENDATION_MAX_BYTES as RECOMMENDATION_MAX_BYTES
from active_memory.lessons.limits import TITLE_MAX_BYTES as TITLE_MAX_BYTES
from active_memory.lessons.limits import utf8_size as utf8_size
from active_memory.lessons.mutations import AdaptLesson as AdaptLesson
from active_memory.lessons.mutations import Author as Author
from active_memory.lessons.mutations import CreateLesson as CreateLesson
from active_memory.lessons.mutations import DeferLesson as DeferLesson
from active_memory.lessons.mutations import HistoryEntry as HistoryEntry
from active_memory.lessons.mutations import Mutation as Mutation
from active_memory.lessons.mutations import PublishReceipt as PublishReceipt
from active_memory.lessons.mutations import RetireLesson as RetireLesson
from active_memory.lessons.mutations import utcnow as utcnow
from active_memory.lessons.scopes import GraphScope as GraphScope
from active_memory.lessons.scopes import RepositoryScope as RepositoryScope
from active_memory.lessons.scopes import Scope as Scope
